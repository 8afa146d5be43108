"""`aqbench ab`'s phase detail: the interleaved plan, journaled before the first block runs.

A value type only; imports nothing from the project (phases.py adds it to the PhaseDetail union).
"""

from __future__ import annotations

import msgspec

__all__ = ["AbPhase", "AbPower"]


class AbPower(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the plan can detect, stated before the first block (orchestrator/ab/power.py): the smallest uniform
    change its p50 figure calls regressed in `power` of sessions at the assumed pair noise, and the pairs a
    uniform `wanted` change would need (at the plan's block size, and at 400 requests a block)."""

    noise: float  # assumed sd x sqrt(block requests) of one pair's log p50 change (--plan-noise)
    power: float = 0.95
    detectable: float | None = None  # relative change, 0.35 for +35 %; None: too few pairs to decide
    wanted: float = 0.10
    allowance: float = 0.0  # the plan's instance allowance it counted (both servers running all session)
    pairs_for_wanted: int | None = None  # None: more than the planner's most pairs
    pairs_for_wanted_400: int | None = None
    # The tail-share figure (candidate requests beyond their item's baseline p90, less the share an unchanged
    # server leaves there): that null share at the plan's requests per item a block (0.5 at one request), the
    # smallest change in points it calls regressed in `power` of sessions, and the pairs it needs to catch
    # `tail_wanted` of requests slowed beyond every baseline value. None: not stated (older journals).
    tail_null: float | None = None
    tail_detectable: float | None = None
    tail_wanted: float = 0.15
    pairs_for_tail_wanted: int | None = None
    pairs_for_tail_wanted_400: int | None = None


class AbPhase(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="kind", tag="ab"):
    """`ab` (started): the two sides, the seeded block order and what the plan can detect; (finished) the
    blocks run and why the session stopped."""

    baseline: str = ""  # the baseline's config file
    candidate: str = ""
    baseline_url: str = ""
    candidate_url: str = ""
    order: str = ""  # one letter a block, A (baseline) or B (candidate): ABBA BAAB ...
    seed: int = 0
    block_requests: int = 0
    block_warmup: int = 0
    sequential: bool = False
    # Both servers running, started afresh before every pair (the default since 2026-12-03): a difference
    # between two server processes falls on one pair, independently pair to pair, as block noise. False:
    # --keep-servers (both up all session) and older journals.
    fresh_pairs: bool = False
    max_duration_s: float | None = None
    confidence: float = 0.9
    # What the plan can detect: a change is called when mean pair change - t x se exceeds the tolerance;
    # t_quantile is that t for the planned pairs, stated before any block runs.
    t_quantile: float | None = None
    latency_tolerance: float = 0.0
    tail_tolerance: float = 0.0
    # The group-sequential rule (orchestrator/ab/sequential.py): a look after every pair from the third on;
    # critical_t[i] is look (i + 3)'s critical t. The session stops at the first look where every decidable
    # figure is decided, and takes at most len(order) / 2 pairs. Empty: no looks (older journals).
    strict: bool = False  # --strict: an inconclusive figure exits 1
    boundary: str = ""
    critical_t: list[float] = []
    # Both servers running all session (--keep-servers): what two identically configured server processes may
    # differ by on one host (latency quantiles: relative; tail shares: points); every latency interval widens by
    # it. 0 with fresh servers every pair or every block (the difference is then pair or block noise) and in
    # older journals.
    instance_allowance: float = 0.0
    instance_tail_allowance: float = 0.0
    power: AbPower | None = None  # what the plan can detect (older journals: not stated)
    blocks_run: int | None = None
    stop_reason: str = ""
