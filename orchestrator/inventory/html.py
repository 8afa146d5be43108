"""inventory.html: the Markdown report's content as one self-contained page (inline CSS, no scripts),
in the house style of report.html. The markup lives in `orchestrator/reports/templates/inventory.html`
(autoescaped, so every text is escaped). Pure.
"""

from __future__ import annotations

from collections import Counter

from orchestrator.inventory.records import BLOCKER_GAP_KINDS, Inventory
from orchestrator.inventory.render import (
    checkpoint_label,
    declared_text,
    gap_sentence,
    gate_text,
    quality_text,
    route_text,
    source_line,
)
from orchestrator.reports.templating import render

__all__ = ["to_html"]


# Worst first: the page leads with what needs a person (a manifest that does not parse, a blocked checkpoint).
_STATUS_ORDER = ("error", "blocked", "unsupported", "planned", "implemented", "family-validated", "aiperf-qualified")


def _rank(status: str) -> int:
    return _STATUS_ORDER.index(status) if status in _STATUS_ORDER else len(_STATUS_ORDER)


def to_html(inv: Inventory) -> str:
    """The whole inventory.html text: the counts by status first, then the checkpoints worst first."""
    counts = Counter([r.status for r in inv.rows] + ["error"] * len(inv.errors))
    return render("inventory.html", inv=inv, source_line=source_line(inv), checkpoint_label=checkpoint_label,
                  by_status=sorted(counts.items(), key=lambda kv: _rank(kv[0])),
                  rows=sorted(inv.rows, key=lambda r: _rank(r.status)),
                  gap_sentence=gap_sentence, route_text=route_text, gate_text=gate_text, quality_text=quality_text,
                  declared_text=declared_text, blocker_gap_kinds=list(BLOCKER_GAP_KINDS.values()))
