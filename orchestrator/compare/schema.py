"""The typed result of `aqbench compare` (compare.json): figures with intervals, provenance, answers.

Records only; computing them is figures.py's and provenance.py's job, showing them render.py's.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from orchestrator.judge.intervals import Change
from orchestrator.supervision.host_summary import HostCondition

__all__ = [
    "COMPARE_SCHEMA_VERSION",
    "ChangedAnswer",
    "Comparison",
    "Figure",
    "ModelComparison",
    "ProvenanceRow",
    "RunRef",
]

COMPARE_SCHEMA_VERSION = 1


class _S(msgspec.Struct, frozen=True, kw_only=True):
    pass


class RunRef(_S, frozen=True, kw_only=True):
    """One side of the comparison: where its journal is and how it ended."""

    journal: str
    run_id: str = ""
    command: str = ""
    status: str = ""
    started_unix_ns: int | None = None
    torn_line: int | None = None
    host: HostCondition | None = None  # the host while the run ran (None: not sampled, an older run)


class ProvenanceRow(_S, frozen=True, kw_only=True):
    """One fact of both runs; `blocks` when a difference makes figures incomparable."""

    name: str
    baseline: str
    candidate: str
    differs: bool
    blocks: bool = False


class Figure(_S, frozen=True, kw_only=True):
    """One compared figure. `lower`/`upper` bound the change (candidate against baseline) in the units
    of `tolerance`: relative (0.05 = 5 %) when `relative`, else absolute (fractions for rates).
    `items` names the dataset items behind a per-item decision (newly wrong, completeness changed)."""

    key: str
    name: str
    unit: str
    baseline: float | None
    candidate: float | None
    change: Change
    lower: float | None = None
    upper: float | None = None
    relative: bool = False
    tolerance: float = 0.0
    higher_is_worse: bool = True
    confidence: float = 0.9
    n_baseline: int = 0
    n_candidate: int = 0
    method: str = ""
    note: str = ""
    items: list[str] = []


class ChangedAnswer(_S, frozen=True, kw_only=True):
    """An item answered differently by the two runs on one path (deterministic models only)."""

    path: str
    item_id: str
    arm: str
    baseline: str | None
    candidate: str | None
    baseline_verdict: str = ""
    candidate_verdict: str = ""
    # The candidate answered this item differently on different requests within its own run.
    varied: bool = False


class ModelComparison(_S, frozen=True, kw_only=True):
    """Everything compared for one model present in both runs."""

    model: str
    deterministic: bool
    paired: bool
    shared_items: int
    figures: list[Figure] = []
    changed_answers: list[ChangedAnswer] = []
    answers_compared: int = 0
    # Thinned empirical CDFs (latency ms, fraction) per series: "client/baseline", "model_call/candidate"...
    cdfs: dict[str, list[tuple[float, float]]] = {}


class Comparison(_S, frozen=True, kw_only=True):
    """compare.json: the verdict first, then why."""

    schema_version: int = COMPARE_SCHEMA_VERSION
    outcome: Literal["no-regression", "regressed", "inconclusive", "refused"]
    exit_code: int
    reason: str = ""
    baseline: RunRef
    candidate: RunRef
    provenance: list[ProvenanceRow] = []
    refusals: list[str] = []
    models: list[ModelComparison] = []
    only_in_baseline: list[str] = []
    only_in_candidate: list[str] = []
    strict: bool = False
