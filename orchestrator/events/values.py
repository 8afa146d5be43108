"""Value types that judges compute and events carry: latency summaries, gate results, a soak window's
statistics, the soak's limits and the facts its verdicts are judged on. They live here, below the judges, so
that events never import a judge."""

from __future__ import annotations

from typing import Literal

import msgspec

from orchestrator.config import SoakConfig

__all__ = ["Summary", "GateResult", "MemorySummary", "WindowStats", "SoakLimits", "ServerExitFact",
           "RestartFact", "AiperfRunFact", "TrendPlan", "StopPlan"]


# Schema evolution as for events: add fields at the end with defaults.
class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """The statistics of one metric; all None when the sample is empty (judge/stats.py computes them)."""

    count: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None


class GateResult(msgspec.Struct, frozen=True, kw_only=True):
    """A correctness gate as judge/gates.py applied it: required against observed, with the counts."""

    gate: str
    scope: str
    required: float
    observed: float
    correct: int
    total: int
    passed: bool
    # Each failing item once, in first-failure order: a soak window answers each item many times, and one
    # entry per failed answer grew a window's summary with its requests (issue 23). `total - correct` counts them.
    failing_items: list[str] = []
    # False when no answer fell in the gate's scope: the gate judged nothing (passed is then False too).
    applicable: bool = True

    @property
    def failed(self) -> bool:
        """Applicable and below the required rate."""
        return self.applicable and not self.passed


class MemorySummary(msgspec.Struct, frozen=True, kw_only=True):
    """Resource samples taken while the window ran (bytes); None when no sample fell inside it."""

    samples: int = 0
    start_bytes: int | None = None
    end_bytes: int | None = None
    peak_bytes: int | None = None
    median_bytes: float | None = None


class WindowStats(msgspec.Struct, frozen=True, kw_only=True):
    """The aggregates of one closed window (profiling phase unless named otherwise)."""

    window: str
    index: int
    start_unix_ns: int
    end_unix_ns: int
    issued: int = 0
    ok: int = 0
    errors: int = 0
    by_cause: dict[str, int] = {}
    warmup_issued: int = 0
    error_rate: float | None = None
    throughput_rps: float | None = None
    client_latency_ms: Summary = Summary()
    server_latency_ms: Summary = Summary()
    model_call_ms: Summary = Summary()
    correct: int = 0
    scored: int = 0
    verdicts: dict[str, int] = {}
    gates: list[GateResult] = []
    correctness_passed: bool | None = None
    rss: MemorySummary = MemorySummary()
    gpu_memory: MemorySummary = MemorySummary()
    restarts: int = 0
    unexpected_exits: int = 0
    incarnations: list[int] = []
    aiperf_classification: str = ""
    accounting_balanced: bool | None = None
    # Seconds without load between the previous window's last answer and this window's first request.
    gap_before_s: float | None = None
    # AIPerf's own timeline (wall-clock ns): process launch, first and last request of any phase, exit.
    aiperf_launch_unix_ns: int | None = None
    first_request_unix_ns: int | None = None
    last_request_unix_ns: int | None = None
    aiperf_exit_unix_ns: int | None = None
    # The observer's own processes while the window ran: aqbench itself, and AIPerf's process tree.
    orchestrator_rss: MemorySummary = MemorySummary()
    aiperf_rss: MemorySummary = MemorySummary()
    # The AIPerf process (1, 2, ...) whose load the window was cut from: a new one follows a failure.
    segment: int = 0
    # Per dataset item, the median latency of its ok profiling requests in this window (server handler_ms,
    # client latency where the server gave none): bounded by the dataset's size, not the request count.
    item_server_ms: dict[str, float] = {}
    item_client_ms: dict[str, float] = {}

    @property
    def startup_s(self) -> float | None:
        """AIPerf's start-up: its launch to its first request."""
        return _span_s(self.aiperf_launch_unix_ns, self.first_request_unix_ns)

    @property
    def exit_s(self) -> float | None:
        """AIPerf's exit: its last answer to its process's end (it writes its exports in between)."""
        return _span_s(self.last_request_unix_ns, self.aiperf_exit_unix_ns)

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.end_unix_ns - self.start_unix_ns) / 1e9)


def _span_s(start_ns: int | None, end_ns: int | None) -> float | None:
    return (end_ns - start_ns) / 1e9 if start_ns is not None and end_ns is not None else None


class SoakLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The limits of `[soak]` that the verdicts apply, exactly as configured."""

    rss_limit_mib_per_h: float = 8.0
    p99_latency_limit_pct_per_h: float = 10.0
    max_error_rate: float = 0.001
    warmup_windows: int = 1
    min_trend_windows: int = 6
    min_trend_span_s: float = 600.0
    trend_confidence: float = 0.98
    rss_growth_limit_mib: float = 64.0
    latency_baseline_windows: int = 3
    max_window_gap_s: float = 1.0
    max_gap_fraction: float = 0.01
    warmup_s: float = 60.0
    rss_wander_mib: float = 3.0
    latency_baseline_s: float = 120.0
    # Journals written before the sampled rule existed were judged per window.
    latency_drift_rule: Literal["window", "sampled"] = "window"

    @classmethod
    def from_config(cls, soak: SoakConfig) -> SoakLimits:
        return cls(rss_limit_mib_per_h=soak.rss_limit_mib_per_h,
                   p99_latency_limit_pct_per_h=soak.p99_latency_limit_pct_per_h,
                   max_error_rate=soak.max_error_rate, warmup_windows=soak.warmup_windows,
                   min_trend_windows=soak.min_trend_windows, min_trend_span_s=soak.min_trend_span_s,
                   trend_confidence=soak.trend_confidence, rss_growth_limit_mib=soak.rss_growth_limit_mib,
                   latency_baseline_windows=soak.latency_baseline_windows,
                   max_window_gap_s=soak.max_window_gap_s, max_gap_fraction=soak.max_gap_fraction,
                   warmup_s=soak.warmup_s, rss_wander_mib=soak.rss_wander_mib,
                   latency_baseline_s=soak.latency_baseline_s, latency_drift_rule=soak.latency_drift_rule)


class ServerExitFact(msgspec.Struct, frozen=True, kw_only=True):
    """An unexpected server exit (the supervisor restarted or gave up), as journaled."""

    incarnation: int
    returncode: int | None = None
    signal: str = ""
    unix_ns: int = 0
    restarted: bool = False
    output_tail: list[str] = []
    # What ended it: "exited" (it died on its own), or the cause of a stop the supervisor decided
    # (ServerExited.stopped_for: "unready", "unresponsive", ...); "" in verdicts written before this field.
    cause: str = ""


class RestartFact(msgspec.Struct, frozen=True, kw_only=True):
    """A restart the supervisor decided (ServerRestarting): the incarnation it starts, why, when it was decided
    and when that incarnation was spawned (0: never; the run ended during the backoff)."""

    incarnation: int
    cause: str = ""
    reason: str = ""
    decided_unix_ns: int = 0
    spawned_unix_ns: int = 0


class AiperfRunFact(msgspec.Struct, frozen=True, kw_only=True):
    """One AIPerf run of the soak that has ended: what it says it issued per phase, and where that count
    comes from ("aiperf_log": requests sent; "phase_manifest": records kept); empty when it said nothing."""

    segment: int
    name: str
    issued: dict[str, int] = {}
    issued_from: dict[str, str] = {}


class TrendPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What one trend verdict can decide under the soak's plan, said before the load starts: the span it
    will judge, whether its slope and its growth can decide at all, the smallest slope that could FAIL
    from the stated wander alone (the sample noise the soak will measure only adds to it) and, for memory,
    `power_slope`: the slope that FAILs in 95 % of soaks at the stated wander alone; `text` says it."""

    metric: str
    judged_span_s: float
    slope_decides: bool
    growth_decides: bool
    detectable_slope: float | None = None
    power_slope: float | None = None
    limit: float | None = None
    unit: str = ""
    text: str = ""


class StopPlan(msgspec.Struct, frozen=True, kw_only=True):
    """When one verdict that can end a soak may first decide (orchestrator/soak/early_stop.py), said before the
    load: at the close of window `window` (None: not before the end), `after_s` from the load's first request, each
    look judging at `confidence` (two-sided); `text` says it."""

    metric: str
    window: int | None = None
    after_s: float | None = None
    confidence: float = 0.0
    text: str = ""
