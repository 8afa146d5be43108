"""inventory.html: the Markdown report's content as one self-contained page (inline CSS, no scripts),
in the house style of report.html. The markup lives in `orchestrator/reports/templates/inventory.html`
(autoescaped, so every text is escaped). Pure.
"""

from __future__ import annotations

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


def to_html(inv: Inventory) -> str:
    """The whole inventory.html text."""
    return render("inventory.html", inv=inv, source_line=source_line(inv), checkpoint_label=checkpoint_label,
                  gap_sentence=gap_sentence, route_text=route_text, gate_text=gate_text, quality_text=quality_text,
                  declared_text=declared_text, blocker_gap_kinds=list(BLOCKER_GAP_KINDS.values()))
