"""The soak's verdict step: judges the evidence at each look and at the end, and journals SoakVerdict."""

from __future__ import annotations

from orchestrator.events import SoakLimits, SoakVerdict, verdict_numbers
from orchestrator.judge.outcome import FAIL
from orchestrator.soak.early_stop import decisive, look_limits
from orchestrator.soak.evidence import EvidenceCollector, LoadFacts, SoakEvidence
from orchestrator.soak.load_coverage import GapAllowance
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.verdicts import ProcessCheck, judge_soak
from orchestrator.spine.ports import EventSink

__all__ = ["SoakJudge"]


class SoakJudge:
    """Judges `judge_soak` on the evidence step's snapshot (EvidenceCollector) once it holds every window closed
    so far, and journals each verdict; the loop hands in what only it knows (LoadFacts)."""

    def __init__(self, bus: EventSink, evidence: EvidenceCollector, limits: SoakLimits, *,
                 gap_allowance: GapAllowance, stop_early: bool) -> None:
        self._bus = bus
        self._evidence = evidence
        self._limits = limits
        self._gap_allowance = gap_allowance
        self._stop_early = stop_early
        self.decided: list[MetricVerdict] = []  # the look's FAILs that ended the soak early (empty: none did)

    async def look(self, load: LoadFacts, *, closed_seq: int, windows_closed: int, decide: bool) -> list[MetricVerdict]:
        """At a window's close: journal the verdicts so far (provisional: the live page shows them from the first
        window on), then, with `decide` and early stops on, judge those that can end the soak at the look's level
        (early_stop.py). Returns the decisive FAILs (empty: the soak goes on); once decided, they are kept."""
        await self.verdicts(load, closed_seq=closed_seq, windows_closed=windows_closed, final=False)
        if not (self._stop_early and decide):
            return []
        evidence = self._snapshot(load)
        self.decided = decisive(judge_soak(evidence, look_limits(self._limits), gap_allowance=self._gap_allowance),
                                evidence.windows, self._limits)
        return self.decided

    async def verdicts(self, load: LoadFacts, *, closed_seq: int, windows_closed: int, final: bool,
                       processes: ProcessCheck | None = None) -> list[MetricVerdict]:
        """Judge every verdict at the stated levels and journal them. A final verdict that an early stop decided
        stays a FAIL: the look judged it at a stricter level, and the windows after it only cut the load short."""
        await self._evidence.wait_seen(closed_seq)  # the evidence holds every window closed so far
        verdicts = judge_soak(self._snapshot(load), self._limits, processes=processes,
                              gap_allowance=self._gap_allowance)
        if final and self.decided:
            stopped = {v.metric: v for v in self.decided}
            verdicts = [v if v.failed or v.metric not in stopped else MetricVerdict(
                metric=v.metric, outcome=FAIL, detail=v.detail or stopped[v.metric].detail,
                reason=f"ended the soak early: {stopped[v.metric].reason}") for v in verdicts]
        for v in verdicts:
            await self._bus.publish(self.event(v, final=final, windows_closed=windows_closed))
        return verdicts

    def _snapshot(self, load: LoadFacts) -> SoakEvidence:
        return self._evidence.evidence(load, sampled_ratios=self._limits.latency_drift_rule == "sampled")

    @staticmethod
    def event(v: MetricVerdict, *, final: bool, windows_closed: int) -> SoakVerdict:
        """The journaled form of one verdict."""
        slope, interval, limit, unit = verdict_numbers(v.detail)
        return SoakVerdict(source="soak", metric=v.metric, passed=v.passed, final=final, outcome=v.outcome,
                           reason=v.reason, windows_closed=windows_closed, slope=slope, interval=interval, limit=limit,
                           unit=unit, detail=v.detail)

