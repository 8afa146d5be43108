"""The numbers behind each soak verdict (SoakVerdict.detail): one frozen Struct per kind of rule, tagged
by `kind`, so a report reads typed fields where it once unpacked a dict."""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from orchestrator.events.values import GateResult, RestartFact, ServerExitFact

__all__ = ["VerdictDetail", "VERDICT_DETAILS", "TrendNumbers", "MemoryDetail", "AiperfGeneration", "SampledMemoryDetail", "SampledDriftDetail", "DriftDetail", "TailDetail",
           "ErrorRateDetail", "WindowCorrectness", "PooledGate", "CorrectnessDetail", "RestartDetail",
           "ProcessCheck", "WindowGap", "GapDetail", "RunAccount", "AccountingDetail", "verdict_numbers"]


class _Detail(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of every verdict detail (not itself a member of the union)."""


class TrendNumbers(_Detail, frozen=True, kw_only=True):
    """A trend rule's numbers (orchestrator/judge/trend.py): the slope per hour in `unit` and its interval at
    `confidence` against `limit`, over `n` windows spanning `span_s`; None where the rule had no figure."""

    slope: float | None = None
    interval: list[float] | None = None
    limit: float | None = None
    unit: str = ""
    n: int | None = None
    span_s: float | None = None
    confidence: float | None = None
    method: str = ""


class MemoryDetail(TrendNumbers, frozen=True, kw_only=True, tag="memory"):
    """Memory of a process tree (server_rss, server_gpu_memory, orchestrator_rss): the per-window medians
    (MiB) of the judged windows, their trend and the growth between the first and last thirds."""

    source: str = ""
    warmup_windows_discarded: int = 0
    windows: list[str] = []
    series: list[float | None] = []
    times_h: list[float] = []
    growth_mib: float | None = None
    growth_limit_mib: float | None = None


class AiperfGeneration(msgspec.Struct, frozen=True, kw_only=True):
    """One AIPerf process of a soak that handed its load over (judge/generations.py): its `pid`, its start
    (s after the load's start: its first request, else its first sample), its settled `level_mib` (None: too
    short to settle), its peak sustained growth over that level, the within-process outcome, its points
    (10 s block medians) and the profiling requests it sent (0: unknown)."""

    pid: int
    start_s: float
    level_mib: float | None = None
    peak_growth_mib: float | None = None
    outcome: str = ""
    points: int = 0
    requests: int = 0


class SampledMemoryDetail(TrendNumbers, frozen=True, kw_only=True, tag="sampled_memory"):
    """Memory judged on every sample after `warmup_s` (judge/sampled_trend.py): `n` batches of block medians
    (MiB) at `batch_times_h` from the span's start, the growth over the span with its interval, and
    `detectable_slope`, the smallest slope (MiB/h) that would FAIL at the noise seen."""

    source: str = ""
    warmup_s: float = 0.0
    samples: int = 0
    batch_times_h: list[float] = []
    series: list[float] = []
    growth_mib: float | None = None
    growth_interval: list[float] | None = None
    growth_limit_mib: float | None = None
    detectable_slope: float | None = None
    wander_mib: float | None = None
    # The last batch's mean less the first's, with its interval: a one-time step beyond the cap near an end
    # of the span, which slope x span underreads, FAILs by it.
    level_rise_mib: float | None = None
    level_rise_interval: list[float] | None = None
    # The first pass over the input (its `first_pass_requests` requests): its end in s after the judged
    # span's start (None while it goes on; the slope is judged after it), and its growth (the cap alone).
    first_pass_requests: int = 0
    first_pass_end_s: float | None = None
    first_pass_growth_mib: float | None = None
    first_pass_growth_interval: list[float] | None = None
    # AIPerf's memory after a handover is judged per process generation (judge/generations.py): then
    # `generations` lists them, the trend numbers (slope, interval, growth, detectable_slope) are the
    # successors' levels' across generations, `n` is the settled successors, and the batch series is empty.
    generations: list[AiperfGeneration] = []


class SampledDriftDetail(TrendNumbers, frozen=True, kw_only=True, tag="sampled_drift"):
    """Latency drift on each request's ratio to its own item's baseline (%), judged on every ratio after
    `warmup_s` (judge/sampled_trend.py): `n` batches of 10 s block medians at `batch_times_h`, the wander
    floor the series itself shows (`wander_pct`, a level sd in % of baseline per `wander_s`), and
    `detectable_slope`, the smallest drift (%/h) that would FAIL at the noise and wander seen."""

    source: str = ""
    warmup_s: float = 0.0
    baseline_s: float = 0.0
    baseline_items: int = 0
    baseline_requests: int = 0
    ratios: int = 0
    batch_times_h: list[float] = []
    series: list[float] = []
    detectable_slope: float | None = None
    wander_pct: float | None = None
    wander_s: float | None = None


class DriftDetail(TrendNumbers, frozen=True, kw_only=True, tag="drift"):
    """Latency drift on the same items: each window's median ratio to the items' baselines (%), its trend."""

    source: str = ""
    warmup_windows_discarded: int = 0
    windows: list[str] = []
    series: list[float | None] = []
    times_h: list[float] = []
    baseline_items: int | None = None
    baseline_windows: int | None = None
    counted: list[int] = []


class TailDetail(TrendNumbers, frozen=True, kw_only=True, tag="tail"):
    """A tail quantile per window (ms) and its trend, judged only where every window holds `min_samples`."""

    source: str = ""
    warmup_windows_discarded: int = 0
    min_samples: int = 0
    counts: list[int] = []
    windows: list[str] = []
    series: list[float | None] = []


class ErrorRateDetail(_Detail, frozen=True, kw_only=True, tag="error_rate"):
    """Errors over the judged windows against `limit` (a fraction), by cause; windows the stop cut short
    are listed and not judged."""

    limit: float = 0.0
    issued: int = 0
    errors: int = 0
    by_cause: dict[str, int] = {}
    warmup_windows_discarded: int = 0
    rate: float | None = None
    worst_window: str = ""
    worst_rate: float | None = None
    series: list[float | None] = []
    cut_short: list[str] = []


class WindowCorrectness(msgspec.Struct, frozen=True, kw_only=True):
    """One window's scored answers and the gates it missed."""

    window: str
    correct: int = 0
    scored: int = 0
    passed: bool | None = None
    gates: list[GateResult] = []


class PooledGate(msgspec.Struct, frozen=True, kw_only=True):
    """A gate's counts pooled over every window."""

    gate: str
    scope: str = ""
    required: float = 0.0
    correct: int = 0
    total: int = 0


class CorrectnessDetail(_Detail, frozen=True, kw_only=True, tag="correctness"):
    """Correctness under load per window, which shortfalls were beyond chance, and the pooled gates."""

    windows: list[WindowCorrectness] = []
    unscored: list[str] = []
    significantly_below: list[str] = []
    below_by_chance: list[str] = []
    pooled: list[PooledGate] = []


class RestartDetail(_Detail, frozen=True, kw_only=True, tag="restart"):
    """The server's unplanned ends (its own exits, and stops the supervisor decided for failed probes), how many
    were followed by a restart, and each restart decided with its cause and spawn time."""

    unexpected_exits: list[ServerExitFact] = []
    restarts: int = 0
    restart_events: list[RestartFact] = []


class ProcessCheck(_Detail, frozen=True, kw_only=True, tag="process"):
    """What was left at the end: orphans the supervisor had to kill, processes still alive, zombies."""

    orphans_killed: int = 0
    leftover: list[str] = []
    zombies: list[str] = []
    # Escaped descendants that had died already (with their parent) and were reaped as zombies of aqbench:
    # counted and shown, not failed (nothing was left behind); "pid N: name" each.
    orphans_reaped: list[str] = []


class WindowGap(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Seconds without load before one window (across the cut from the previous one)."""

    window: str
    gap_s: float
    segment: int = 0
    # Of gap_s, the host's own pause (the wall clock ran ahead of the monotonic clock: a suspended VM), not
    # judged: no process could send meanwhile (orchestrator/soak/pauses.py).
    paused_s: float = 0.0


class GapDetail(_Detail, frozen=True, kw_only=True, tag="gap"):
    """Time without load across the cuts: each gap (beyond `allowance_s`) against `limit` (s), their sum against
    `max_fraction` of the soak's span; `fraction` None until there is a cut to judge."""

    limit: float = 0.0
    unit: str = "s"
    max_fraction: float = 0.0
    windows: list[WindowGap] = []
    total_s: float = 0.0
    span_s: float = 0.0
    fraction: float | None = None
    # Open loop: the idle time the schedule itself leaves between requests (s); gaps are judged beyond it, and
    # `total_s` and `fraction` count only what lies beyond it (0: closed loop, every gap judged whole).
    allowance_s: float = 0.0


class RunAccount(msgspec.Struct, frozen=True, kw_only=True):
    """One ended AIPerf run: what it says it issued per phase (and from where) against what was seen."""

    run: str
    segment: int = 0
    issued: dict[str, int] = {}
    issued_from: dict[str, str] = {}
    seen: dict[str, int] = {}


class AccountingDetail(_Detail, frozen=True, kw_only=True, tag="accounting"):
    """Every request accounted: the windows whose invariant broke, and each ended run against its windows."""

    windows: int = 0
    breached_windows: list[str] = []
    runs: list[RunAccount] = []
    unknown: list[str] = []
    running: str = ""
    stopped_short: list[str] = []
    cut_short_breached: list[str] = []
    # Each segment's tail that held a request (its last window closed on time before its runs ended): "name: n".
    tails: list[str] = []


VERDICT_DETAILS: tuple[type[_Detail], ...] = (MemoryDetail, DriftDetail, TailDetail, ErrorRateDetail,
                                              CorrectnessDetail, RestartDetail, ProcessCheck, GapDetail,
                                              AccountingDetail, SampledMemoryDetail, SampledDriftDetail)
# A new rule appends its own variant (a new class with a new tag, added to the union): journals already
# written keep decoding, so no schema version is needed for it.
VerdictDetail: TypeAlias = (MemoryDetail | DriftDetail | TailDetail | ErrorRateDetail | CorrectnessDetail
                            | RestartDetail | ProcessCheck | GapDetail | AccountingDetail | SampledMemoryDetail
                            | SampledDriftDetail)


def verdict_numbers(detail: VerdictDetail | None) -> tuple[float | None, list[float] | None, float | None, str]:
    """The (slope, interval, limit, unit) a verdict table shows beside the outcome: a trend's numbers, an
    error rate's or a gap's limit; nothing for the others."""
    if isinstance(detail, TrendNumbers):
        return detail.slope, detail.interval, detail.limit, detail.unit
    if isinstance(detail, ErrorRateDetail):
        return None, None, detail.limit, ""
    if isinstance(detail, GapDetail):
        return None, None, detail.limit, detail.unit
    return None, None, None, ""
