"""[slo] and [sweep]: the service levels a load point must hold, and the points a sweep tries."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from orchestrator.config.common import Fraction, NonNegInt, PositiveFloat, PositiveInt, Section

__all__ = ["SloConfig", "SweepConfig"]


class SloConfig(Section, frozen=True, kw_only=True):
    """[slo]: what every request of a load point must hold; an unset limit is not judged. Each is decided
    only with `confidence` on the point's own requests, else inconclusive."""

    p99_latency_ms: PositiveFloat | None = None
    """The client's p99 request latency limit, ms (`--p99-latency-ms`)."""
    p90_latency_ms: PositiveFloat | None = None
    """The client's p90 request latency limit, ms (`--p90-latency-ms`)."""
    p99_model_call_ms: PositiveFloat | None = None
    """The server's p99 `model_call_ms` limit (the Task's own time, from its records), ms."""
    max_error_rate: Fraction = 0.05
    """The largest share of a point's profiling requests that may fail (0: any failure fails the point)."""
    answers: bool = True
    """Answers under load equal the answers at concurrency 1 (deterministic models), or the model's gates hold
    (sampling models)."""
    complete_outputs: bool = True
    """No answer under load is incomplete (cut off, empty, length-limited) where its concurrency-1 answer was whole."""
    confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.90
    """One-sided confidence a pass or a fail needs (binomial test on the requests beyond each limit)."""
    min_answers: PositiveInt = 10
    """Answers compared with concurrency 1 that an answers or completeness pass needs; fewer: inconclusive."""


class SweepConfig(Section, frozen=True, kw_only=True):
    """[sweep]: the load points `aqbench sweep` tries, lowest first, and how it searches among them."""

    mode: Literal["rate", "concurrency"] = "rate"
    """`rate`: open loop, points are requests per second (`--rates`); `concurrency`: closed loop (`--concurrencies`)."""
    points: list[PositiveFloat] = msgspec.field(default_factory=lambda: [1.0, 2.0, 4.0, 8.0])
    """The offered loads, ascending (whole numbers in concurrency mode)."""
    requests_per_point: PositiveInt = 60
    """Profiling requests per point (`--requests-per-point`): enough for the default error-rate limit to pass."""
    repeats: NonNegInt = 1
    """Extra runs of a point whose evidence could not decide (its requests pooled with the first run's)."""
    extend: NonNegInt = 2
    """Doublings of the highest point tried, one at a time, when none of the points failed: a capacity at or above
    the grid's top is still bracketed. 0: the grid only."""
    refine: NonNegInt = 1
    """Midpoints tried between the highest passing and the lowest failing point, halving the bracket each time."""
    stop_early: bool = True
    """End a point's run early once its requests (pooled with its earlier runs) clearly break an SLO, judged every
    5 requests at 99.9 % confidence: AIPerf stops sending that load's requests, records those open, and goes on to
    the next load of its batch. false: every run sends all its planned requests."""
    saturation_share: Fraction = 0.10
    """Open loop: a run that completes answers this share below the offered rate is said saturated."""
    queueing_ratio: Annotated[float, Meta(gt=1.0)] = 1.5
    """A run whose median latency in its last third is this many times its first third's is said queueing."""
    max_duration_s: PositiveFloat | None = None
    """No point starts after this many seconds of sweep (`--max-duration`); the rest is said undecided."""
    precision: Annotated[float, Meta(gt=0.0, lt=1.0)] = 0.10
    """The capacity's 90 % interval half-width, relative to it, at which the search stops (`--precision`): until
    then the time --max-duration leaves is spent on the loads that narrow the interval most. The plan says before
    any load whether it is reachable; a sweep that does not reach it says the width it reached."""
