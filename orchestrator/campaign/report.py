"""The campaign's report files: report.json, report.md and report.html, folded from campaign.jsonl alone."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

import msgspec

from orchestrator.campaign.fold import CampaignReport, fold_campaign
from orchestrator.campaign.timeline import timeline_svg

__all__ = ["write_campaign_reports", "render_campaign_markdown", "render_campaign_html"]


def _attempts(row: object) -> str:
    from orchestrator.campaign.fold import CampaignRow

    assert isinstance(row, CampaignRow)
    return "; ".join(f"#{a.attempt} on {a.node or '-'}: {a.ended}" + (f" ({a.reason})" if a.reason else "")
                     for a in row.attempts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_campaign_markdown(r: CampaignReport) -> str:
    acc = r.accounting
    lines = [f"# Campaign {r.campaign_id}", "",
             f"Status **{r.status}** (exit {r.exit_code}), wall {r.wall_s:.1f} s, {r.sessions} session(s), "
             f"cluster `{r.address}`." + (f" {r.reason}" if r.reason else ""), "",
             "## Models", "", "| model | status | stage | attempts | reason | reproduce |", "|---|---|---|---|---|---|"]
    for row in r.rows:
        lines.append(f"| {row.model} | {row.status} | {row.failed_stage or '-'} | {_cell(_attempts(row))} | "
                     f"{_cell(row.reason) or '-'} | `{row.reproduce}` |")
    kept = [(row.model, k) for row in r.rows for k in row.kept_on_node]
    if kept:
        lines += ["", "Files left on their node (over the bring-back limit):", ""]
        lines += [f"- {m}: `{k.path}` ({k.size_bytes} bytes)" for m, k in kept]
    lines += ["", "## Nodes", "", "| node | attempts | busy s | share of wall | lost |", "|---|---|---|---|---|"]
    for n in r.nodes:
        lines.append(f"| {n.node} | {n.attempts} | {n.busy_s:.1f} | {n.share_of_wall:.0%} | {'yes' if n.lost else 'no'} |")
    lines += ["", "## Accounting", "",
              f"{acc.finished} of {acc.models} models ended with a status "
              f"({', '.join(f'{k}: {v}' for k, v in sorted(acc.by_status.items())) or 'none'}); "
              + ("none unaccounted." if acc.balanced else f"UNACCOUNTED: {', '.join(acc.unaccounted)}."), ""]
    return "\n".join(lines)


def render_campaign_html(r: CampaignReport) -> str:
    acc = r.accounting
    rows = "".join(
        f"<tr><td>{escape(row.model)}</td><td>{escape(row.status)}</td><td>{escape(row.failed_stage or '-')}</td>"
        f"<td>{escape(_attempts(row))}</td><td>{escape(row.reason or '-')}</td><td><code>{escape(row.reproduce)}"
        f"</code></td></tr>" for row in r.rows)
    nodes = "".join(f"<tr><td>{escape(n.node)}</td><td>{n.attempts}</td><td>{n.busy_s:.1f}</td>"
                    f"<td>{n.share_of_wall:.0%}</td><td>{'yes' if n.lost else 'no'}</td></tr>" for n in r.nodes)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Campaign {escape(r.campaign_id)}</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px}"
            "table{border-collapse:collapse}</style></head><body>"
            f"<h1>Campaign {escape(r.campaign_id)}</h1><p>Status <b>{escape(r.status)}</b> (exit {r.exit_code}), "
            f"wall {r.wall_s:.1f} s, {r.sessions} session(s). {escape(r.reason)}</p>"
            "<h2>Models</h2><table><tr><th>model</th><th>status</th><th>stage</th><th>attempts</th><th>reason</th>"
            f"<th>reproduce</th></tr>{rows}</table>"
            f"<h2>Timeline</h2>{timeline_svg(r)}"
            "<h2>Nodes</h2><table><tr><th>node</th><th>attempts</th><th>busy s</th><th>share of wall</th>"
            f"<th>lost</th></tr>{nodes}</table>"
            f"<h2>Accounting</h2><p>{acc.finished} of {acc.models} models ended with a status; "
            + ("none unaccounted." if acc.balanced else f"unaccounted: {escape(', '.join(acc.unaccounted))}.")
            + "</p></body></html>\n")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_campaign_reports(folder: str | Path) -> CampaignReport:
    """Fold `<folder>/campaign.jsonl` and write the three report files beside it. Blocks."""
    out = Path(folder)
    report = fold_campaign(out / "campaign.jsonl")
    _write_atomic(out / "report.json", msgspec.json.format(msgspec.json.encode(report, order="sorted"), indent=1) + b"\n")
    _write_atomic(out / "report.md", render_campaign_markdown(report).encode())
    _write_atomic(out / "report.html", render_campaign_html(report).encode())
    return report
