"""The campaign's report files: report.json, report.md and report.html, folded from campaign.jsonl alone."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import msgspec
from markupsafe import Markup

from orchestrator.campaign.fold import CampaignReport, CampaignRow, fold_campaign
from orchestrator.campaign.timeline import timeline_svg
from orchestrator.reports.templating import render

__all__ = ["write_campaign_reports", "render_campaign_markdown", "render_campaign_html"]


def _attempts(row: CampaignRow) -> str:
    return "; ".join(f"#{a.attempt} on {a.node or '-'}" + "".join(f" GPU {g.index} {g.name} {g.uuid}" for g in a.gpus)
                     + f": {a.ended}" + (f" ({a.reason})" if a.reason else "")
                     + (f"; server {', '.join(a.servers_not_stopped)} not seen to stop: its supervisor's death "
                        f"signals it to stop (SIGTERM) where {a.node or 'that host'} still runs; if that host "
                        "cannot be reached, it is left behind there" if a.servers_not_stopped else "")
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
    """report.html (templates/campaign.html): self-contained, every text escaped. It leads with the models'
    counts by status and lists the models that did not qualify first."""
    rows = sorted(r.rows, key=lambda row: row.status == "aiperf-qualified")  # stable: the campaign's order within
    counts = Counter(row.status for row in r.rows)
    by_status = sorted(counts.items(), key=lambda kv: (kv[0] == "aiperf-qualified", kv[0]))
    return render("campaign.html", r=r, rows=[(row, _attempts(row)) for row in rows], by_status=by_status,
                  timeline=Markup(timeline_svg(r)))


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
