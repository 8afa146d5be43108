"""[soak]: the soak's shape and the limits of its verdicts."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from orchestrator.config.common import Fraction, NonNegFloat, NonNegInt, PositiveFloat, PositiveInt, Section

__all__ = ["SoakConfig"]


class SoakConfig(Section, frozen=True, kw_only=True):
    """[soak]: the soak's shape and the limits its drift, leak and error verdicts apply."""

    duration_s: PositiveFloat = 8 * 3600.0
    """Total soak time (`--duration` overrides it)."""
    window_s: PositiveFloat = 300.0
    """Length of one window (`--window` overrides it)."""
    warmup_windows: NonNegInt = 1
    """First windows left out of the latency trend and error-rate verdicts (memory uses `warmup_s`)."""
    checkpoint_every_s: PositiveFloat = 1800.0
    """How often `soak.*` is rewritten while the soak runs (the verdicts are journaled at every window's close)."""
    rss_limit_mib_per_h: NonNegFloat = 8.0
    """The memory trend limit (server, aqbench itself, GPU), MiB per hour."""
    p99_latency_limit_pct_per_h: NonNegFloat = 10.0
    """The latency drift limit (`latency_drift`, `server_p99_latency`), % of the baseline per hour."""
    max_error_rate: Fraction = 0.001
    """The largest share of failed requests over the windows after warmup."""
    min_trend_windows: Annotated[int, Meta(ge=3)] = 6
    """Judged windows (after warmup) a latency trend verdict needs; fewer: inconclusive."""
    min_trend_span_s: NonNegFloat = 600.0
    """Judged span a slope verdict needs (memory: of samples after `warmup_s`; latency: first to last judged
    window); shorter: inconclusive (memory growth beyond its cap FAILs at any span)."""
    trend_confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.98
    """Two-sided confidence level of a trend's slope interval (0.98: a flat series FAILs at most 1 % of the time)."""
    rss_growth_limit_mib: NonNegFloat = 64.0
    """Memory growth over the judged span (slope x span) that FAILs once its interval lies wholly above it."""
    latency_baseline_windows: PositiveInt = 3
    """Judged windows whose per-window quantiles are the tail verdict's baseline (`server_p99_latency`)."""
    latency_baseline_s: PositiveFloat = 120.0
    """Each item's baseline for `latency_drift`: the median latency of its requests in its first judged
    `latency_baseline_s` (from its first request after `warmup_s`); later requests are judged as ratios to it."""
    latency_drift_rule: Literal["window", "sampled"] = "sampled"
    """How `latency_drift` is judged. "sampled": every request's ratio to its item's baseline
    (`latency_baseline_s`), 10 s block medians, the batch-means rule widened by the wander floor the ratios
    themselves show at the 5-minute scale (host load moves latency for minutes). "window": each item's
    median per window over its median in the first judged windows, the window trend rule."""
    max_window_gap_s: NonNegFloat = 1.0
    """The longest time without load allowed between two consecutive windows."""
    max_gap_fraction: Fraction = 0.01
    """The share of the soak all gaps together may take."""
    warmup_s: NonNegFloat = 60.0
    """Time after the load starts left out of the memory verdicts (which judge every sample after it)."""
    aiperf_handover_mib: NonNegFloat = 32.0
    """Hand the load over to a fresh AIPerf process (no gap, docs/soak.md) once the sending AIPerf process
    tree's memory is this far above its level in its first minute of profiling (0: never by memory). Keep it
    well under `rss_growth_limit_mib`: `aiperf_rss` judges the sending process's memory."""
    aiperf_handover_every_s: NonNegFloat = 0.0
    """Hand the load over to a fresh AIPerf process this often as well (0: only by memory)."""
    rss_wander_mib: NonNegFloat = 3.0
    """Slow wander of a healthy process's memory level (sd per 5 minutes, MiB) that the memory verdicts allow
    for: a span too short to show its own wander is widened by it."""
    journal: Literal["compact", "plain"] = "compact"
    """The run journal's form: "compact" writes `events.jsonl.zst` (zstd, blocks closed at least once a second:
    a few hundred bytes per request, and a kill loses at most the last second); "plain" writes `events.jsonl`."""
