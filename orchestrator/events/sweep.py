"""The sweep's events: each load point judged against the SLOs, the capacity concluded, and the sweep's
phase detail. Values only; the judging lives in orchestrator/sweep/."""

from __future__ import annotations

from typing import Literal

import msgspec

from orchestrator.events.base import Event

__all__ = ["SloName", "SloOutcome", "SloCheck", "SloPower", "PointStats", "SweepPointJudged", "SloCapacity",
           "CapacityEstimate", "SweepConcluded", "SweepPhase"]

SloName = Literal["p99_latency", "p90_latency", "p99_model_call", "error_rate", "answers", "complete_outputs",
                  "evidence"]
SloOutcome = Literal["pass", "fail", "inconclusive"]


class SloCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One SLO at one point: what was seen against the limit, on how many requests, and why it decided so.
    `observed` and `limit` are in the SLO's own unit (ms, or a share for error_rate; a count otherwise)."""

    slo: SloName
    outcome: SloOutcome
    observed: float | None = None
    limit: float | None = None
    n: int = 0
    beyond: int = 0
    reason: str = ""
    # The requests' worth as independent evidence (n over the design effect of their correlation in start
    # order); absent where they count as independent.
    effective_n: float | None = None


class SloPower(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a point of `n` requests can decide for one SLO, stated before the sweep runs (independent
    requests assumed): the requests a pass needs with none beyond, the count beyond that fails, and the true
    share beyond the limit it detects with 90% power."""

    slo: str
    n: int
    pass_needs: int
    fail_at: int | None = None
    detects_share: float | None = None
    statement: str = ""


class PointStats(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One point's profiling requests, pooled over its runs (warmup left out)."""

    requests: int = 0
    ok: int = 0
    errors_by_cause: dict[str, int] = {}
    error_rate: float | None = None
    goodput_rps: float | None = None
    achieved_rps: float | None = None
    audio_s_per_s: float | None = None
    real_time_factor: float | None = None
    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    model_call_p50_ms: float | None = None
    model_call_p99_ms: float | None = None
    answers_compared: int = 0
    answers_differing: int = 0
    newly_incomplete: int = 0
    span_s: float | None = None


class SweepPointJudged(Event, frozen=True, kw_only=True):
    """A load point's verdict after its latest run: each SLO checked on its pooled requests. `offered` is
    requests/s (rate mode) or concurrent requests (concurrency mode); `windows` are its AIPerf windows."""

    index: int
    mode: Literal["rate", "concurrency"]
    offered: float
    windows: list[str]
    outcome: SloOutcome
    checks: list[SloCheck] = []
    stats: PointStats = PointStats()
    accounting_balanced: bool = True
    aiperf: list[str] = []  # each run's classification (complete, partial, cancelled, failed)
    # The point's last run was stopped once its requests clearly broke an SLO (not all planned were sent).
    stopped_early: bool = False
    # Signs the server saturated in the point's latest run (achieved below offered, latency growing), in words.
    saturation: list[str] = []


class SloCapacity(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One SLO's own capacity: the load where its figure (the share of requests beyond its limit, or its step
    for an exact SLO) is fitted to cross what the limit allows, with the interval's ends (None: open there),
    the decided points bracketing the crossing, its shape, and its fitted share at the sweep's capacity."""

    slo: str
    allowed: float  # the share beyond the limit the SLO allows (p99: 0.01; an error rate: itself; answers: 0)
    value: float | None = None
    low: float | None = None
    high: float | None = None
    below: float | None = None  # the highest load whose fitted share is within what the limit allows
    above: float | None = None  # the lowest load whose fitted share exceeds it
    shape: str = ""  # smooth, cliff, undetermined, or not_reached (never crossed among the loads run)
    share_at_capacity: float | None = None
    summary: str = ""


class CapacityEstimate(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The capacity as a figure: `value` with its `level` interval [`low`, `high`] (None: open at that end),
    fitted from the points' requests near the boundary; the SLO that binds and its boundary's shape; the
    precision asked (relative half-width) against `half_width` reached, and where not reached the requests
    near the boundary it would need (None: more points, not more requests, are needed)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    level: float = 0.90
    binding: str = ""
    shape: str = ""
    half_width: float | None = None
    precision: float = 0.10
    reached: bool = False
    requests_needed: int | None = None
    slos: list[SloCapacity] = []
    summary: str = ""


class SweepConcluded(Event, frozen=True, kw_only=True):
    """The capacity: the highest point that held every SLO with every lower point holding too, and the
    lowest that broke one (`broken`: its failed checks). `outcome` says how far the points decided it."""

    outcome: Literal["bracketed", "all_passed", "none_passed", "inconclusive"]
    mode: Literal["rate", "concurrency"]
    unit: str
    capacity: float | None = None
    highest_passing: float | None = None
    lowest_failing: float | None = None
    broken: list[SloCheck] = []
    undecided: list[str] = []
    summary: str = ""
    estimate: CapacityEstimate | None = None  # the capacity fitted with its interval (None: before estimates)


class SweepPhase(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="kind", tag="sweep"):
    """`sweep` (started): the points planned, how many requests each, and the SLO limits; (finished) the
    points run."""

    mode: str = ""
    points: list[float] = []
    requests_per_point: int | None = None
    warmup_requests: int | None = None
    slo: dict[str, float] = {}
    points_run: int | None = None
    argv: list[str] = []
    detects: list[SloPower] = []  # what each point can decide at its planned request count
    # The concurrency-1 baseline window's planned duration, stated before any load: its requests (warmup
    # included) x the capability probe's median latency on the sweep's own rows. None: no baseline window (the
    # first point is concurrency 1) or no probe latency to plan it by. A point's own is (warmup + requests) / rate.
    baseline_planned_s: float | None = None
    planned: list[str] = []  # the planned durations as printed before any load
    extensions: list[float] = []  # the doublings above `points` tried, one at a time, while no point fails
    precision: float | None = None  # [sweep] precision: the relative half-width the search stops at
    precision_plan: list[str] = []  # whether that precision is reachable in --max-duration, said before any load
