"""The campaign timeline as an inline SVG: one lane per node, one bar per attempt, coloured by how it ended."""

from __future__ import annotations

from html import escape

from orchestrator.campaign.fold import CampaignReport

__all__ = ["timeline_svg"]

_COLOURS = {"finished": "#4c9f70", "interrupted": "#c9a227", "node-lost": "#c0392b", "error": "#8e44ad",
            "running": "#7f8c8d"}
_LANE, _LEFT, _WIDTH = 28, 150, 640


def timeline_svg(report: CampaignReport) -> str:
    """Models per node over time; the x axis is seconds since the campaign started."""
    lanes = [n.node_id for n in report.nodes]
    names = {n.node_id: n.node + (" (lost)" if n.lost else "") for n in report.nodes}
    height = _LANE * max(1, len(lanes)) + 40
    scale = _WIDTH / max(report.wall_s, 1e-9)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_LEFT + _WIDTH + 20}" height="{height}" '
             f'role="img" aria-label="models per node over time" data-chart="campaign-timeline">']
    for i, nid in enumerate(lanes):
        y = 10 + i * _LANE
        parts.append(f'<text x="4" y="{y + 17}" font-size="12">{escape(names[nid])}</text>')
        parts.append(f'<line x1="{_LEFT}" y1="{y + _LANE - 2}" x2="{_LEFT + _WIDTH}" y2="{y + _LANE - 2}" '
                     f'stroke="#ddd"/>')
    for row in report.rows:
        for a in row.attempts:
            if a.node_id not in lanes:
                continue
            y = 10 + lanes.index(a.node_id) * _LANE
            x0 = _LEFT + (a.started_unix_ns - report.started_unix_ns) / 1e9 * scale
            x1 = _LEFT + ((a.ended_unix_ns or report.finished_unix_ns) - report.started_unix_ns) / 1e9 * scale
            colour = _COLOURS.get(a.ended, "#7f8c8d")
            label = f"{row.model} #{a.attempt}: {a.ended} {a.status}".strip()
            parts.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1.0):.1f}" height="{_LANE - 8}" '
                         f'fill="{colour}"><title>{escape(label)}</title></rect>')
            parts.append(f'<text x="{x0 + 3:.1f}" y="{y + 17}" font-size="10" fill="#fff">{escape(row.model)}</text>')
    axis_y = 10 + len(lanes) * _LANE + 14
    parts.append(f'<text x="{_LEFT}" y="{axis_y}" font-size="11">0 s</text>')
    parts.append(f'<text x="{_LEFT + _WIDTH - 60}" y="{axis_y}" font-size="11">{report.wall_s:.1f} s</text>')
    parts.append("</svg>")
    return "\n".join(parts)
