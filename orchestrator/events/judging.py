"""Events that judge: capability probes, verdicts, gates, result rows, soak windows and verdicts,
completeness defects and non-inferiority decisions."""

from __future__ import annotations

from typing import Literal

from orchestrator.events.base import Event
from orchestrator.events.evidence import CapabilityEvidence
from orchestrator.events.payloads import (
    GateCounts,
    NoninferiorityResult,
    ResultRow,
)
from orchestrator.events.values import WindowStats
from orchestrator.events.verdicts import VerdictDetail

__all__ = ["CapabilityProbed", "VerdictReached", "GateEvaluated", "ModelResult", "SoakWindowClosed", "SoakVerdict", "AnswerIncomplete", "SoakWindowOpened", "SoakHandover", "ProcessSampled", "NoninferiorityJudged", "SoakStopped"]


# ----------------------------------------------------------------------------------- judging


class CapabilityProbed(Event, frozen=True, kw_only=True):
    """One capability check of a model: transport, conditioning, text-only or transcription-only."""

    model: str
    check: Literal["transport", "conditioning", "text_only", "transcription_only"]
    passed: bool
    reason: str = ""
    evidence: CapabilityEvidence | None = None


class VerdictReached(Event, frozen=True, kw_only=True):
    """One answer scored against its dataset item."""

    model: str
    item_id: str
    arm: str
    path: Literal["http", "native", "aiperf", "reference"] = "http"
    # `incomplete`: the answer has a completeness defect (AnswerIncomplete); never counted right.
    verdict: Literal["correct", "wrong", "unparsed", "error", "incomplete"]
    answer: str | None = None
    gold: str = ""
    item_kind: str = ""
    scoring: str = ""
    request_id: str = ""
    detail: str = ""


class GateEvaluated(Event, frozen=True, kw_only=True):
    """A correctness gate from bench.toml, applied exactly as stated (never rounded or lowered)."""

    model: str
    gate: str
    required: float
    observed: float
    passed: bool
    scope: str = ""
    detail: GateCounts = GateCounts()
    # False when the stage had no answer in the gate's scope: not applicable, listed, never a failure.
    applicable: bool = True


class ModelResult(Event, frozen=True, kw_only=True):
    """The published result row of one checkpoint (versioned by the journal's schema)."""

    model: str
    status: str
    failed_stage: str = ""
    row: ResultRow = ResultRow()


class SoakWindowClosed(Event, frozen=True, kw_only=True):
    """Per-window aggregates of a soak (kept in memory; details stay in the journal)."""

    window: str
    index: int
    summary: WindowStats | None = None


class SoakVerdict(Event, frozen=True, kw_only=True):
    """One soak verdict with the numbers behind it (`detail`, by kind of rule); `final` false at checkpoints."""

    metric: str
    passed: bool
    final: bool = False
    detail: VerdictDetail | None = None
    # pass, fail or inconclusive (orchestrator.judge.outcome); journals older than the three outcomes are
    # upgraded as they are read.
    outcome: str = ""
    # The verdict's own words, and the numbers a verdict table shows (trend verdicts: slope and its interval
    # against the limit, per hour in `unit`; verdict_numbers() of the detail).
    reason: str = ""
    windows_closed: int = 0
    slope: float | None = None
    interval: list[float] | None = None
    limit: float | None = None
    unit: str = ""


# -------------------------------------------------------------------------------- completeness


class SoakStopped(Event, frozen=True, kw_only=True):
    """A look at a window's close decided the soak (orchestrator/soak/early_stop.py): the load was halted so
    that every open request is still recorded, and the soak ends with the windows so far. `verdicts` are the
    look's decisive FAILs (judged at `confidence`, two-sided), `windows_closed` the windows judged then."""

    verdicts: list[SoakVerdict]
    windows_closed: int
    confidence: float
    load_s: float | None = None


class AnswerIncomplete(Event, frozen=True, kw_only=True):
    """An answer that is not whole (judge/completeness.py): its defects, the first one primary.

    One per defective answer on every path: `capability` (the probe), `http` and `native` (correctness
    arms), `aiperf` (under load, qualify or soak). `max_tokens` is the request's limit (None: none
    asked); `finish_reason` and `completion_tokens` are what the server said (None: not said).
    """

    model: str
    path: Literal["capability", "http", "native", "aiperf", "reference"]
    defects: list[str]
    details: list[str] = []
    item_id: str = ""
    arm: str = ""
    request_id: str = ""
    answer: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None


class SoakWindowOpened(Event, frozen=True, kw_only=True):
    """A soak window's time cut: requests a load client starts at or after `start_unix_ns` (wall clock)
    belong to it until the next window opens. Published ahead of its start, so no request precedes it."""

    window: str
    index: int
    start_unix_ns: int
    segment: int = 0


class SoakHandover(Event, frozen=True, kw_only=True):
    """The soak's load moved from one AIPerf process to a fresh one without a gap (docs/soak.md, "AIPerf
    hands over"): the successor, gated once ready, was let go as the predecessor was halted. Times are
    wall clock (unix ns); `gap_s` is the time with no request in flight, the successor's first request start
    after the predecessor's last answer (window_gap judges it, as at a window cut); `sent` is what the predecessor issued in its profiling phase (None: unknown)."""

    predecessor: str
    successor: str
    segment: int = 0
    reason: str = ""
    ready_unix_ns: int = 0
    halt_unix_ns: int | None = None
    go_unix_ns: int = 0
    last_request_unix_ns: int | None = None
    last_answer_unix_ns: int | None = None
    first_request_unix_ns: int | None = None
    gap_s: float | None = None
    sent: int | None = None
    # Concurrency mode: the most requests of both processes open at once over the target, as the limit
    # was set (0: never over; None: rate mode).
    over_target: int | None = None
    # Rate mode: the predecessor's next slot, when the successor's first request was due (None: unknown, or
    # concurrency mode; then the successor's schedule began one interval after `go`).
    due_unix_ns: int | None = None


class SoakTail(Event, frozen=True, kw_only=True):
    """A segment's last window closed on time, before its AIPerf runs ended (docs/soak.md, "Windows close on
    time"): the requests of that window still open at its close, recorded once the runs had ended (the tail),
    counted here once and added by the accounting verdict; and how the last run ended, which the window's own
    summary could not say at its close. Profiling counts unless named otherwise; `balanced` is the tail's
    invariant (issued = ok + errors by cause, nothing in flight at the exit, no duplicate)."""

    window: str  # the segment's last window, which the tail follows
    segment: int = 0
    aiperf_run: str = ""  # the run that sent last
    issued: int = 0
    ok: int = 0
    errors: int = 0
    by_cause: dict[str, int] = {}
    warmup_issued: int = 0
    carried: int = 0
    balanced: bool = True
    problems: list[str] = []
    aiperf_classification: str = ""
    aiperf_exit_unix_ns: int | None = None


class ProcessSampled(Event, frozen=True, kw_only=True):
    """Resident memory of one observer-side process tree: `orchestrator` (aqbench itself) or `aiperf`."""

    role: Literal["orchestrator", "aiperf"]
    pid: int
    rss_bytes: int
    processes: int = 1


# ------------------------------------------------------------------------------ non-inferiority


class NoninferiorityJudged(Event, frozen=True, kw_only=True):
    """A model judged against its reference on paired answers: the decision and the gate it used."""

    model: str
    result: NoninferiorityResult
