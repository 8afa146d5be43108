"""[soak]: the soak's shape and the limits of its verdicts."""

from __future__ import annotations

from typing import Annotated

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
    """First windows left out of the trend and error-rate verdicts."""
    checkpoint_every_s: PositiveFloat = 1800.0
    """How often verdicts are journaled and `soak.*` rewritten while the soak runs."""
    rss_limit_mib_per_h: NonNegFloat = 8.0
    """The memory trend limit (server, aqbench itself, GPU), MiB per hour."""
    p99_latency_limit_pct_per_h: NonNegFloat = 10.0
    """The latency drift limit (`latency_drift`, `server_p99_latency`), % of the baseline per hour."""
    max_error_rate: Fraction = 0.001
    """The largest share of failed requests over the windows after warmup."""
    min_trend_windows: Annotated[int, Meta(ge=3)] = 6
    """Judged windows (after warmup) a trend verdict needs; fewer: inconclusive."""
    min_trend_span_s: NonNegFloat = 600.0
    """Time from the first to the last judged window a trend verdict needs; shorter: inconclusive."""
    trend_confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.95
    """Two-sided confidence level of a trend's slope interval."""
    rss_growth_limit_mib: NonNegFloat = 64.0
    """Memory growth over the soak that fails (median of the last third of the windows minus the first third's)."""
    latency_baseline_windows: PositiveInt = 3
    """Judged windows whose per-item medians are each item's latency baseline."""
    max_window_gap_s: NonNegFloat = 1.0
    """The longest time without load allowed between two consecutive windows."""
    max_gap_fraction: Fraction = 0.01
    """The share of the soak all gaps together may take."""
