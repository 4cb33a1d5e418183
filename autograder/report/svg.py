"""Small inline SVG charts, written by hand: a histogram with its median and mean marked. No script, no
external file: the page works offline and prints."""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT, PAD = 320, 120, 22  # px; a row of three fits a laptop screen and an A4 page


def bins_for(values: list[float], maximum: float) -> list[tuple[float, float, int]]:
    """(low, high, count) per bin: one bin per point up to 20 points, else 20 equal bins; the last bin closed."""
    top = maximum if maximum > 0 else max(values, default=1.0) or 1.0
    n = max(1, min(20, math.ceil(top)))
    width = top / n
    counts = [0] * n
    for v in values:
        counts[min(n - 1, max(0, int(v / width)))] += 1
    return [(i * width, (i + 1) * width, c) for i, c in enumerate(counts)]


def histogram(
    values: list[float], maximum: float, title: str, median: float, mean: float, unit: str = ""
) -> str:
    bins = bins_for(values, maximum)
    tallest = max((c for _, _, c in bins), default=0) or 1
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    top = bins[-1][1] if bins else 1.0
    bar_w = plot_w / len(bins)
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (low, high, count) in enumerate(bins):
        h = plot_h * count / tallest
        x, y = PAD + i * bar_w, PAD + plot_h - h
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}" '
            f'data-count="{count}"><title>{low:g}–{high:g}{unit}: {count}</title></rect>'
        )
    for value, cls in ((median, "median"), (mean, "mean")):
        x = PAD + plot_w * (min(max(value, 0.0), top) / top)
        parts.append(
            f'<line class="{cls}" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD - 4}" y2="{PAD + plot_h}"/>'
        )
    base = PAD + plot_h
    parts += [
        f'<line class="axis" x1="{PAD}" x2="{PAD + plot_w}" y1="{base}" y2="{base}"/>',
        f'<text x="{PAD}" y="{base + 14}">0</text>',
        f'<text x="{PAD + plot_w}" y="{base + 14}" text-anchor="end">{top:.4g}{escape(unit)}</text>',
        f'<text x="{PAD}" y="{PAD - 8}">{tallest}</text>',
        "</svg>",
    ]
    return "".join(parts)
