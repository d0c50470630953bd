"""The output of ``structgen eval``: a rich table on the terminal, and ``eval.json``, ``eval.md`` and
``eval.svg`` (held-out accuracy and validity per family and decoding mode) in the output folder."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from .evaluate import ACCURACY_NAME, Row
from .plot import grouped_bars_svg, write_atomic

COLUMNS = ["family", "mode", "n", "valid", "fallback", "accuracy", "exact", "nfe/token", "forced", "tokens/s"]


def _cells(r: Row) -> list[str]:
    return [r.family, r.mode, str(r.n), f"{r.valid:.1%}", f"{r.fallback:.1%}", f"{r.accuracy:.1%}",
            f"{r.exact:.1%}", f"{r.nfe_per_token:.3f}", f"{r.forced_share:.1%}", f"{r.tokens_per_s:.1f}"]


def _caption(rows: list[Row]) -> str:
    """What the accuracy column measures, for each family of ``rows``."""
    fams = dict.fromkeys(r.family for r in rows)
    return "accuracy: " + "; ".join(f"{k} = {ACCURACY_NAME.get(k, 'accuracy')}" for k in fams)


def rich_table(rows: list[Row], title: str) -> Table:
    t = Table(title=title, caption=_caption(rows), caption_justify="left")
    for i, c in enumerate(COLUMNS):
        t.add_column(c, justify="left" if i < 2 else "right")
    for r in rows:
        t.add_row(*_cells(r))
    return t


def markdown(rows: list[Row], title: str) -> str:
    lines = [f"# {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    lines += ["", _caption(rows)]
    return "\n".join(lines) + "\n"


def write_report(rows: list[Row], out_dir: str | Path, *, title: str, meta: dict) -> list[Path]:
    """Write eval.json (figures, settings, every decoded example), eval.md and eval.svg; their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta, "rows": [r.as_dict() for r in rows],
               "examples": [vars(s) for r in rows for s in r.examples]}
    write_atomic(out / "eval.json", json.dumps(payload, indent=2, default=str))
    write_atomic(out / "eval.md", markdown(rows, title))
    families = list(dict.fromkeys(r.family for r in rows))
    modes = list(dict.fromkeys(r.mode for r in rows))
    by = {(r.family, r.mode): r for r in rows}
    series = {}
    for m in modes:
        series[f"{m} accuracy"] = [by[(f, m)].accuracy if (f, m) in by else None for f in families]
    for m in modes:
        series[f"{m} valid"] = [by[(f, m)].valid if (f, m) in by else None for f in families]
    write_atomic(out / "eval.svg", grouped_bars_svg(families, series, title=title, width=980))
    return [out / "eval.json", out / "eval.md", out / "eval.svg"]
