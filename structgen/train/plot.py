"""A dependency-free SVG bar chart for evaluation results (grouped bars, one group per task family).

``grouped_bars_svg(groups, series, title=..., percent=True)`` returns SVG text; ``write_atomic`` writes it
atomically. Values are fractions in 0..1 shown as percentages, or plain numbers with ``percent=False``.
"""

from __future__ import annotations

import html
import os
import tempfile
from pathlib import Path

PALETTE = ["#2b6cb0", "#c05621", "#2f855a", "#90cdf4", "#fbd38d", "#9ae6b4", "#6b46c1", "#b83280"]


def grouped_bars_svg(groups: list[str], series: dict[str, list[float]], *, title: str,
                     percent: bool = True, width: int = 760, height: int = 320) -> str:
    """One group of bars per entry of ``groups``; ``series`` maps a legend label to one value per group (None:
    no bar, e.g. a decoding mode a family has no row for). The legend wraps onto as many rows as it needs."""
    left, right, top = 48, 16, 40
    legend, lx, row = [], left, 0  # (x, row) of each legend entry
    for name in series:
        need = 24 + 8 * len(name)
        if lx > left and lx + need > width - right:
            lx, row = left, row + 1
        legend.append((lx, row))
        lx += need
    bottom = 40 + 18 * (row + 1)
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value = 1.0 if percent else max([v for vs in series.values() for v in vs if v is not None] + [1e-9]) * 1.1
    n_series = max(1, len(series))
    group_w = plot_w / max(1, len(groups))
    bar_w = group_w * 0.8 / n_series
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">{html.escape(title)}</text>']
    for i in range(5):  # grid lines and their labels
        v = top_value * i / 4
        y = top + plot_h - plot_h * i / 4
        label = f"{v:.0%}" if percent else f"{v:.2g}"
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{label}</text>')
    for gi, g in enumerate(groups):
        x0 = left + gi * group_w + group_w * 0.1
        for si, (name, values) in enumerate(series.items()):
            v = values[gi] if gi < len(values) else None
            if v is None:
                continue
            h = plot_h * min(max(v, 0.0), top_value) / top_value
            x = x0 + si * bar_w
            tip = f"{v:.1%}" if percent else f"{v:.3g}"
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w * 0.92:.1f}" height="{h:.1f}" '
                       f'fill="{PALETTE[si % len(PALETTE)]}"><title>{html.escape(name)}: {tip}</title></rect>')
        out.append(f'<text x="{left + gi * group_w + group_w / 2:.1f}" y="{top + plot_h + 18}" '
                   f'text-anchor="middle">{html.escape(g)}</text>')
    for si, (name, (lx, row)) in enumerate(zip(series, legend)):
        y = top + plot_h + 32 + 18 * row
        out.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{PALETTE[si % len(PALETTE)]}"/>')
        out.append(f'<text x="{lx + 16}" y="{y + 10}">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file renamed into place (never half-written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
