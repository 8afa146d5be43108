"""Inline SVG pictures for report.html, drawn by our own small code: no JS, no fonts, no network."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["scatter_chart", "line_chart", "histogram_chart", "grid_chart", "COLORS", "VERDICT_COLORS",
           "EXPECTED_WRONG_COLOR"]

# Each function returns one `<svg>` element as text, tagged with `data-chart` so tests can find it. Every text it
# embeds (ids, titles, labels, names, tooltips) is escaped here, so the pages take the result as markup.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")
VERDICT_COLORS = {"correct": "#2ca02c", "wrong": "#d62728", "unparsed": "#ffbf00", "error": "#7f7f7f",
                  "incomplete": "#9467bd"}
_W, _H = 760, 280
_L, _R, _T, _B = 64, 16, 44, 40  # margins: room for tick labels, and above the plot the title and the legend
# The title has the top row to itself and the legend the row below it, so neither can run into the other
# however long a model's name or a series' name is.
_TITLE_Y, _LEGEND_Y = 16, 34


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float, step: float) -> str:
    """A tick label with as many decimals as the tick step needs (so close ticks never read alike)."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if step > 0 and abs(round(step * 10**decimals) - step * 10**decimals) > 1e-6:
        decimals += 1  # steps like 2.5 x 10^k need one more digit
    return f"{v:.{decimals}f}"


class _Frame:
    """Maps data to pixels and draws axes, ticks, labels and a legend."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], *, log_x: bool = False) -> None:
        self.log_x = log_x
        x0, x1 = x_range
        if log_x:
            x0, x1 = math.log10(x0), math.log10(x1)
        self.x0, self.x1 = x0, (x1 if x1 > x0 else x0 + 1.0)
        self.y0, self.y1 = y_range[0], (y_range[1] if y_range[1] > y_range[0] else y_range[0] + 1.0)

    def x(self, v: float) -> float:
        if self.log_x:
            v = math.log10(max(v, 1e-9))
        return _L + (v - self.x0) / (self.x1 - self.x0) * (_W - _L - _R)

    def y(self, v: float) -> float:
        return _H - _B - (v - self.y0) / (self.y1 - self.y0) * (_H - _T - _B)

    def axes(self, x_label: str, y_label: str) -> list[str]:
        out = [f'<line x1="{_L}" y1="{_H - _B}" x2="{_W - _R}" y2="{_H - _B}" stroke="#333"/>',
               f'<line x1="{_L}" y1="{_T}" x2="{_L}" y2="{_H - _B}" stroke="#333"/>']
        yt = _nice_ticks(self.y0, self.y1)
        for t in yt:
            y = self.y(t)
            out.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" stroke="#e5e5e5"/>')
            out.append(f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t, _step(yt))}</text>')
        if self.log_x:
            ticks = [10 ** e for e in range(math.floor(self.x0), math.ceil(self.x1) + 1)]
            ticks += [m * t for t in ticks for m in (2, 5)]
            ticks = sorted(t for t in ticks if self.x0 <= math.log10(t) <= self.x1)
        else:
            ticks = _nice_ticks(self.x0, self.x1, 8)
        for t in ticks:
            x = self.x(t)
            out.append(f'<line x1="{x:.1f}" y1="{_H - _B}" x2="{x:.1f}" y2="{_H - _B + 4}" stroke="#333"/>')
            label = _fmt(t, t if self.log_x else _step(ticks))
            out.append(f'<text x="{x:.1f}" y="{_H - _B + 18}" text-anchor="middle">{label}</text>')
        out.append(f'<text x="{(_L + _W - _R) / 2}" y="{_H - 6}" text-anchor="middle">{escape(x_label)}</text>')
        out.append(f'<text x="14" y="{(_T + _H - _B) / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 14 {(_T + _H - _B) / 2})">{escape(y_label)}</text>')
        return out


def _step(ticks: Sequence[float]) -> float:
    return ticks[1] - ticks[0] if len(ticks) > 1 else 1.0


def _legend(names: Sequence[tuple[str, str]]) -> list[str]:
    out, x = [], _L
    for name, color in names:
        out.append(f'<rect x="{x}" y="{_LEGEND_Y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{_LEGEND_Y}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return out


def _svg(chart: str, title: str, body: list[str], height: int = _H, width: int = _W, caption: bool = True) -> str:
    # The caption is the top row (the legend is the row below); <title> also gives it to screen readers.
    shown = (f'<text x="8" y="{_TITLE_Y}" font-weight="bold">{escape(title)}</text>' if caption else "")
    return (f'<svg class="chart" data-chart="{escape(chart)}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'font-family="sans-serif" font-size="11"><title>{escape(title)}</title>{shown}'
            + "".join(body) + "</svg>")


def _empty(chart: str, title: str, why: str) -> str:
    # A short strip, not a blank frame: an empty picture should not take a picture's room.
    return _svg(chart, title, [f'<text x="8" y="18" fill="#888">{escape(title)}: {escape(why)}</text>'],
                height=28, caption=False).replace('class="chart"', 'class="chart empty"', 1)


def scatter_chart(chart: str, title: str, series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
                  *, x_label: str, y_label: str) -> str:
    """Dots per series on one shared axis (e.g. client and server latency over time)."""
    pts = [p for _n, s in series for p in s]
    if not pts:
        return _empty(chart, title, "no data")
    f = _Frame((min(p[0] for p in pts), max(p[0] for p in pts)), (0.0, max(p[1] for p in pts) * 1.05))
    body = f.axes(x_label, y_label)
    for i, (_name, s) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        # One path of zero-length round-capped segments draws every dot with one element.
        d = "".join(f"M{f.x(x):.1f} {f.y(y):.1f}h0" for x, y in s)
        # Later series draw smaller dots on top, so equal values (client ~ server) stay visible.
        width = max(6.0 - 1.8 * i, 2.0)
        body.append(f'<path class="series" d="{d}" stroke="{color}" stroke-width="{width:.1f}" '
                    f'stroke-linecap="round" fill="none"/>')
    body += _legend([(n, COLORS[i % len(COLORS)]) for i, (n, _s) in enumerate(series)])
    return _svg(chart, title, body)


def line_chart(chart: str, title: str, series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
               *, x_label: str, y_label: str) -> str:
    """Polylines per series on one shared axis (e.g. RSS and GPU memory over time)."""
    pts = [p for _n, s in series for p in s]
    if not pts:
        return _empty(chart, title, "no samples")
    f = _Frame((min(p[0] for p in pts), max(p[0] for p in pts)), (0.0, max(p[1] for p in pts) * 1.05))
    body = f.axes(x_label, y_label)
    for i, (_name, s) in enumerate(series):
        points = " ".join(f"{f.x(x):.1f},{f.y(y):.1f}" for x, y in s)
        body.append(f'<polyline class="series" points="{points}" fill="none" '
                    f'stroke="{COLORS[i % len(COLORS)]}" stroke-width="1.5"/>')
    body += _legend([(n, COLORS[i % len(COLORS)]) for i, (n, _s) in enumerate(series)])
    return _svg(chart, title, body)


def histogram_chart(chart: str, title: str, edges: Sequence[float], counts: Mapping[str, Sequence[int]],
                    *, x_label: str) -> str:
    """Step outlines of each series' bin counts over shared bins (log x when the bins are log-spaced)."""
    if not edges or not counts:
        return _empty(chart, title, "no data")
    log_x = edges[0] > 0 and edges[-1] / edges[0] > 4
    top = max(max(c) for c in counts.values()) or 1
    f = _Frame((edges[0], edges[-1]), (0.0, top * 1.1), log_x=log_x)
    body = f.axes(x_label, "requests")
    for i, (_name, c) in enumerate(counts.items()):
        color = COLORS[i % len(COLORS)]
        d = [f"M{f.x(edges[0]):.1f} {f.y(0):.1f}"]
        for j, n in enumerate(c):
            d.append(f"L{f.x(edges[j]):.1f} {f.y(n):.1f}L{f.x(edges[j + 1]):.1f} {f.y(n):.1f}")
        d.append(f"L{f.x(edges[-1]):.1f} {f.y(0):.1f}")
        body.append(f'<path class="series" d="{"".join(d)}" stroke="{color}" stroke-width="1.5" '
                    f'fill="{color}" fill-opacity="0.15"/>')
    body += _legend([(n, COLORS[i % len(COLORS)]) for i, n in enumerate(counts)])
    return _svg(chart, title, body)


# A wrong answer on an arm that withholds the audio (`expected_wrong`) is what a model that listens gives: drawn
# in its own quiet colour, not as a failure.
EXPECTED_WRONG_COLOR = "#b8c7dc"


def grid_chart(chart: str, title: str, arms: Sequence[str],
               rows: Sequence[tuple[str, dict[str, tuple[str, str]]]], *,
               expected_wrong: Sequence[str] = ()) -> str:
    """Items (rows) by arms (columns), one coloured cell per verdict; each cell's tooltip has the answer. A
    `wrong` cell on an arm of `expected_wrong` is coloured as expected, not as a failure."""
    if not rows:
        return _empty(chart, title, "no verdicts")
    cell_w, cell_h, label_w, top = 90, 14, 260, _T + 12
    height = top + cell_h * len(rows) + 30
    body = []
    for j, arm in enumerate(arms):
        body.append(f'<text x="{label_w + j * cell_w + cell_w / 2}" y="{top - 8}" '
                    f'text-anchor="middle">{escape(arm)}</text>')
    for i, (item, cells) in enumerate(rows):
        y = top + i * cell_h
        body.append(f'<text x="{label_w - 6}" y="{y + cell_h - 3}" text-anchor="end">{escape(item[:40])}</text>')
        for j, arm in enumerate(arms):
            verdict, tip = cells.get(arm, ("", "not asked"))
            color = EXPECTED_WRONG_COLOR if verdict == "wrong" and arm in expected_wrong \
                else VERDICT_COLORS.get(verdict, "#f4f4f4")
            body.append(f'<rect class="cell" x="{label_w + j * cell_w + 1}" y="{y + 1}" width="{cell_w - 2}" '
                        f'height="{cell_h - 2}" fill="{color}"><title>{escape(f"{item} / {arm}: {tip}")}</title>'
                        f'</rect>')
    x = 8
    shown = [a for a in arms if a in expected_wrong]
    legend = list(VERDICT_COLORS.items()) + ([(f"wrong on {', '.join(shown)} (expected)", EXPECTED_WRONG_COLOR)]
                                              if shown else [])
    for verdict, color in legend:
        body.append(f'<rect x="{x}" y="{_LEGEND_Y - 9}" width="10" height="10" fill="{color}"/>'
                    f'<text x="{x + 14}" y="{_LEGEND_Y}">{escape(verdict)}</text>')
        x += 30 + 7 * len(verdict)
    width = max(_W, label_w + cell_w * len(arms) + 20)
    return _svg(chart, title, body, height=height, width=width)
