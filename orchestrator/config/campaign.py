"""[campaign]: `aqbench campaign` on Ray."""

from __future__ import annotations

from orchestrator.config.common import NonNegFloat, NonNegInt, PositiveFloat, Section

__all__ = ["CampaignConfig"]


class CampaignConfig(Section, frozen=True, kw_only=True):
    """[campaign]: `aqbench campaign` on Ray: retries after a lost node, parallelism, what comes back."""

    max_retries: NonNegInt = 2
    """Retries of a model whose node (or worker) was lost; a failed stage is a verdict, never retried."""
    max_parallel: NonNegInt = 0
    """Models at once; 0: as the cluster's free resources allow (`--max-parallel` overrides it)."""
    stop_grace_s: PositiveFloat = 120.0
    """How long a stopped campaign waits for its tasks before force-cancelling them."""
    bring_back_mib: NonNegFloat = 64.0
    """A run-folder file larger than this stays on its node and is listed in the campaign report."""
