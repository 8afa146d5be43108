"""[compare]: when `aqbench compare` calls a change real."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from orchestrator.config.common import Fraction, NonNegFloat, NonNegInt, Section

__all__ = ["CompareConfig"]


class CompareConfig(Section, frozen=True, kw_only=True):
    """[compare]: when `aqbench compare` calls a change real. A figure is `unchanged` when its interval lies
    within the tolerance, `regressed` or `improved` when wholly beyond it, else `inconclusive`."""

    confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.90
    """Two-sided level of every interval (at 0.90 each direction errs at most 5 %)."""
    latency_tolerance: NonNegFloat = 0.05
    """Relative: a latency quantile within 5 % is unchanged."""
    throughput_tolerance: NonNegFloat = 0.05
    """Relative, on requests completed per second (the median of 20 slices of the profiling span)."""
    error_rate_tolerance: Fraction = 0.01
    """Absolute fraction of requests, for all causes together and for each cause."""
    correctness_tolerance: Fraction = 0.02
    """Absolute fraction of items, on pass rates, audio lift and incomplete answers of sampling models only: a
    deterministic model regresses on any newly wrong item, and on any item newly incomplete."""
    resamples: Annotated[int, Meta(ge=200)] = 2000
    """Bootstrap resamples per interval."""
    seed: NonNegInt = 0
    """The bootstrap's seed (the same runs always compare the same)."""
    tail_tolerance: Fraction = 0.05
    """Absolute fraction of requests, on the tail share: candidate requests beyond their item's baseline p90,
    less the share an unchanged server leaves there (about 10 to 18 %, by requests per item)."""
