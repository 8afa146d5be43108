"""[inventory]: what `aqbench inventory` audits beyond the checkout."""

from __future__ import annotations

from orchestrator.config.common import Section

__all__ = ["InventoryConfig"]


class InventoryConfig(Section, frozen=True, kw_only=True):
    """[inventory]: what `aqbench inventory` audits beyond what the TRTMC checkout shows."""

    candidates: list[str] = []
    """Always audited, by Hugging Face id or profile name (the shipped bench.toml lists the owners' six)."""
