"""The figures of ``benchmarks/conformance.py``: counts per source, compile times, slow schemas, the table
it prints and the JSON ``--json`` writes."""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from conformance_checks import STAGES

MAX_BUG_EXAMPLES = 25  # examples kept per kind of finding
MAX_REJECT_EXAMPLES = 150


COUNT_KEYS = ("schemas", "valid", "invalid", "sg_compiled", "sg_automaton", "sg_grammar", "sg_lenient",
              "sg_valid_accepted", "sg_invalid_rejected", "sg_invalid_accepted", "sg_constraint_invalid_accepted",
              "sg_unchecked", "sg_format_asserted", "ll_compiled", "ll_valid_accepted", "ll_invalid_rejected",
              "ll_invalid_accepted",
              "ll_unchecked")


def summarise(results: Sequence[dict]) -> dict:
    """Counts per source and in total: ``{"sources": {name: counts}, "total": counts}``."""
    groups: dict[str, dict] = {}
    for r in results:
        for name in (r["source"], "total"):
            g = groups.setdefault(name, dict.fromkeys(COUNT_KEYS, 0))
            g["schemas"] += 1
            g["valid"] += r["n_valid"]
            g["invalid"] += r["n_invalid"]
            for e in STAGES:
                er = r.get(e)
                if not er:
                    continue
                g[f"{e}_compiled"] += bool(er["compiled"])
                for k in ("valid_accepted", "invalid_rejected", "invalid_accepted", "unchecked"):
                    g[f"{e}_{k}"] += er[k]
            sg = r.get("sg") or {}
            if sg.get("compiled"):
                g["sg_automaton"] += sg.get("engine") == "automaton"
                g["sg_grammar"] += sg.get("engine") == "grammar"
                g["sg_lenient"] += bool(sg.get("lenient"))
                g["sg_constraint_invalid_accepted"] += sg.get("constraint_invalid_accepted", 0)
                g["sg_format_asserted"] += sg.get("format_asserted", 0)
    total = groups.pop("total", dict.fromkeys(COUNT_KEYS, 0))
    return {"sources": dict(sorted(groups.items(), key=lambda kv: (kv[0] == "JSON-Schema-Test-Suite", kv[0]))),
            "total": total}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return math.nan
    k = min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))
    return xs[k]


def timing(results: Sequence[dict], source_prefix: str = "maskbench/") -> dict:
    """Median and p95 compile time (ms) per engine over the schemas whose id starts with ``source_prefix``."""
    out = {}
    for e in STAGES:
        xs = [r[e]["compile_s"] * 1e3 for r in results
              if r["id"].startswith(source_prefix) and r.get(e) and r[e].get("compile_s") is not None]
        out[e] = {"n": len(xs), "median_ms": statistics.median(xs) if xs else math.nan, "p95_ms": _pct(xs, 0.95),
                  "max_ms": max(xs) if xs else math.nan}
    return out


def slow_schemas(results: Sequence[dict], threshold_s: float = 5.0) -> list[dict]:
    out = []
    for r in results:
        for e in STAGES:
            er = r.get(e) or {}
            if er.get("compile_s") is not None and er["compile_s"] > threshold_s:
                out.append({"case": r["id"], "engine": e if e == "ll" else f"sg/{er.get('engine')}",
                            "compile_s": round(er["compile_s"], 2), "compiled": er["compiled"]})
    return sorted(out, key=lambda x: -x["compile_s"])


def print_report(results: Sequence[dict], summary: dict, times: dict, wall_s: float, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=max(Console().width, 132))
    t = Table(title=f"Conformance on {summary['total']['schemas']} schemas ({wall_s:.0f} s): structgen (constraint + "
                    "validators) | llguidance (strict)")
    for col in ("source", "schemas", "compiled sg", "automaton", "grammar", "compiled ll", "valid accepted sg | ll",
                "invalid rejected sg | ll", "invalid accepted sg | ll"):
        t.add_column(col, justify="left" if col == "source" else "right")

    def row(name: str, g: dict, style: str | None = None) -> None:
        t.add_row(name, str(g["schemas"]), str(g["sg_compiled"]), str(g["sg_automaton"]), str(g["sg_grammar"]),
                  str(g["ll_compiled"]), f"{g['sg_valid_accepted']} | {g['ll_valid_accepted']} of {g['valid']}",
                  f"{g['sg_invalid_rejected']} | {g['ll_invalid_rejected']} of {g['invalid']}",
                  f"{g['sg_invalid_accepted']} | {g['ll_invalid_accepted']}", style=style)

    mb = dict.fromkeys(COUNT_KEYS, 0)
    for name, g in summary["sources"].items():
        row(name, g)
        if name != "JSON-Schema-Test-Suite":
            for k in COUNT_KEYS:
                mb[k] += g[k]
    t.add_section()
    if mb["schemas"] and mb["schemas"] != summary["total"]["schemas"]:
        row("maskbench (all)", mb, "bold")
    row("total", summary["total"], "bold")
    console.print(t)
    tot = summary["total"]
    console.print(f"structgen: {tot['sg_lenient']} grammar-engine schemas compiled leniently (validators enforce "
                  f"the rest); the constraint alone accepts {tot['sg_constraint_invalid_accepted']} invalid "
                  f"instances, the validators let {tot['sg_invalid_accepted']} of them through. "
                  f"{tot['sg_format_asserted']} valid-labelled instances are rejected only because structgen asserts "
                  f"string formats (draft 2020-12 leaves format an annotation). "
                  f"Unchecked (time guard): sg {tot['sg_unchecked']}, "
                  f"ll {tot['ll_unchecked']}.")
    for e, name in (("sg", "structgen"), ("ll", "llguidance")):
        x = times[e]
        console.print(f"compile time per maskbench schema, {name}: median {x['median_ms']:.1f} ms, "
                      f"p95 {x['p95_ms']:.1f} ms, max {x['max_ms']:.0f} ms (n={x['n']})")


def _brief(er: dict) -> dict:
    out = {k: er[k] for k in ("compiled", "engine", "reason", "valid_accepted", "invalid_rejected",
                              "invalid_accepted") if k in er}
    out["compile_s"] = None if er.get("compile_s") is None else round(er["compile_s"], 5)
    return out


def figures(results: Sequence[dict], cfg, wall_s: float) -> dict:
    """Everything ``--json`` writes (``cfg``: the run's ``conformance.RunConfig``)."""
    summary = summarise(results)
    found = [b for r in results for b in r.get("bugs", [])]
    counts: dict[str, int] = {}
    bugs = []
    for b in found:
        counts[b["kind"]] = counts.get(b["kind"], 0) + 1
        if counts[b["kind"]] <= MAX_BUG_EXAMPLES:
            bugs.append(b)
    reasons: dict[str, dict[str, int]] = {"sg": {}, "ll": {}}
    for r in results:
        for e in STAGES:
            er = r.get(e) or {}
            if not er.get("compiled") and er.get("reason"):
                key = er["reason"].split(":")[0][:80] if e == "sg" else er["reason"][:80]
                reasons[e][key] = reasons[e].get(key, 0) + 1
    return {
        "config": {"vocab": cfg.vocab, "workers": cfg.workers, "mem_gb": cfg.mem_gb,
                   "compile_limit_s": cfg.compile_limit, "check_limit_s": cfg.check_limit, **cfg.extra},
        "wall_s": round(wall_s, 1),
        "total": summary["total"],
        "sources": summary["sources"],
        "compile_time": timing(results),
        "slow": slow_schemas(results),
        "not_compiled_reasons": {e: dict(sorted(v.items(), key=lambda kv: -kv[1])[:40]) for e, v in reasons.items()},
        "finding_counts": counts,
        "bugs": bugs,
        "valid_rejected_examples": [x for r in results for x in r.get("rejects", [])][:MAX_REJECT_EXAMPLES],
        "schemas": [{"id": r["id"], **{e: _brief(r[e]) for e in STAGES if r.get(e)}} for r in results],
    }
