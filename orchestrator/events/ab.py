"""`aqbench ab`'s phase detail: the interleaved plan, journaled before the first block runs.

A value type only; imports nothing from the project (phases.py adds it to the PhaseDetail union).
"""

from __future__ import annotations

import msgspec

__all__ = ["AbPhase"]


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
    blocks_run: int | None = None
    stop_reason: str = ""
