"""The verdict every soak rule returns (MetricVerdict): pass, fail or inconclusive, with its reason and detail."""

from __future__ import annotations

import msgspec

from orchestrator.events import VerdictDetail
from orchestrator.judge.outcome import FAIL, PASS, Outcome

__all__ = ["MetricVerdict"]


class MetricVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One verdict: pass, fail, or inconclusive (the evidence cannot decide; `reason` names what is missing)."""

    metric: str
    outcome: Outcome
    reason: str
    detail: VerdictDetail | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == PASS

    @property
    def failed(self) -> bool:
        return self.outcome == FAIL
