"""The journal's payload Structs: what events carry beside their own fields (result rows, mismatches, decisions, ...).
Typed, so a renamed field is a type error, not a silently empty report cell; evolve by appending defaulted fields.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.base.identity import ModelIdentity
from orchestrator.events.key import RunKey

__all__ = ["Json", "FOREIGN_JSON", "HostFacts", "ItemRef", "AnswerMismatch", "AiperfSettings", "IncompleteAnswer",
           "CompletenessChange", "GateCitation", "NoninferiorityResult", "ResultRow", "GateCounts", "NoticeContext",
           "AudioFacts"]

Json = dict[str, Any]  # foreign data only: see FOREIGN_JSON

# Every event field that holds foreign JSON, as `Event.field`, with what it holds. Nothing else is a dict of
# anything: what aqbench writes itself is a Struct.
# A test holds every event to this list.
FOREIGN_JSON: dict[str, str] = {
    "LogLine.fields": "a printed line's own JSON object (a server's or AIPerf's structured log)",
    "AiperfExited.aggregate": "AIPerf's own aggregate of the run (profile_export_aiperf.json), as it wrote it",
    "ServerReady.models": "the server's `GET /v1/models` entries, kept as evidence of what it served",
}


class HostFacts(msgspec.Struct, frozen=True, kw_only=True):
    """Where a run ran."""

    hostname: str = ""
    os: str = ""
    machine: str = ""
    cpu: str = ""
    cpus: int = 0
    python: str = ""


class ItemRef(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset item on one arm."""

    item_id: str
    arm: str = ""


class AnswerMismatch(msgspec.Struct, frozen=True, kw_only=True):
    """One item whose answers differ between paths; `answers` maps a path (`http`, `native`,
    `under_load`, `correctness_stage`) to its answer."""

    item_id: str
    arm: str = ""
    request_id: str = ""
    answers: dict[str, str | None] = {}


class AiperfSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The workload of qualify's AIPerf stage."""

    warmup_requests: int | None = None
    requests: int | None = None
    concurrency: int | None = None
    request_rate: float | None = None
    streaming: bool | None = None
    arms: list[str] = []
    request_timeout_s: float | None = None


class IncompleteAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One incomplete answer as a stage lists it, beside its verdict."""

    item_id: str
    arm: str = ""
    path: str = ""
    request_id: str = ""
    verdict: str = ""
    defects: list[str] = []


class CompletenessChange(msgspec.Struct, frozen=True, kw_only=True):
    """An answer under load whole differently from the same item's answer in the correctness stage."""

    item_id: str
    arm: str = ""
    request_id: str = ""
    under_load: list[str] = []
    correctness_stage: list[str] = []


class GateCitation(msgspec.Struct, frozen=True, kw_only=True):
    """Where a gate was read: the file, its revision and the entry inside it (`benchmarks.mmlu.quantized_gate`).
    (Not named `key`: credential redaction treats a field named for a key as a secret.)"""

    file: str
    revision: str = ""
    entry: str = ""


class NoninferiorityResult(msgspec.Struct, frozen=True, kw_only=True):
    """A model's paired non-inferiority decision against its reference (judge/noninferiority.py).

    Scores, `estimate` (R, positive when the model is worse), its one-sided 95% bounds and `margin` are in
    points. `b` counts problems only the reference got right, `c` only the model; `n` the pairs judged.
    `out_of_capacity` problems the model rejected as beyond its capacity left the comparison on both
    sides; `candidate_failures` (no answer) and `candidate_incomplete` were counted as the model's wrong
    answers; `reference_unanswered` problems had no reference answer and left the comparison.
    """

    outcome: str
    method: str = ""
    reference_score: float | None = None
    candidate_score: float | None = None
    estimate: float | None = None
    lower: float | None = None
    upper: float | None = None
    margin: float | None = None
    gate_used: str = ""
    margin_source: str = ""
    citations: list[GateCitation] = []
    b: int | None = None
    c: int | None = None
    n: int = 0
    both_right: int = 0
    both_wrong: int = 0
    out_of_capacity: int = 0
    capacity_messages: list[str] = []
    candidate_failures: int = 0
    candidate_incomplete: int = 0
    reference_unanswered: int = 0
    items_needed: int | None = None
    cutoff: float | None = None
    arms: list[str] = []
    quantized: bool = False
    sampled: bool = False
    seeds: int = 1
    candidate_precision: str = ""
    reference_precision: str = ""
    reason: str = ""
    # The smallest regression this decision could have detected at its n and margin (right/wrong pairs, the
    # model losing only problems the reference got right): FAIL from `fail_from_b` such problems, an observed
    # regression of `detectable_regression` points; a true regression of `detectable_power_regression` points
    # fails with probability 0.8. None where no b up to n fails.
    fail_from_b: int | None = None
    detectable_regression: float | None = None
    detectable_power_regression: float | None = None


class ResultRow(ModelIdentity, frozen=True, kw_only=True):
    """The published result row of one checkpoint (its identity and more), beside its status."""

    bundle_sha256: str = ""
    qualify_command: str = ""
    aiperf_command: str = ""
    reason: str = ""
    noninferiority: NoninferiorityResult | None = None
    # What the row depends on (orchestrator/runkey/digests.py); None in journals written before keys existed.
    keyed_by: RunKey | None = None


class GateCounts(msgspec.Struct, frozen=True, kw_only=True):
    """The counts behind a gate's observed rate."""

    correct: int = 0
    total: int = 0
    failing_items: list[str] = []


class NoticeContext(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a warning or failure belongs."""

    model: str = ""
    pid: int | None = None
    incarnation: int | None = None


class AudioFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The audio a server record says it received (the reference's and trtmc-server's `audio` object)."""

    format: str = ""
    sample_rate_hz: int | None = None
    channels: int | None = None
    seconds: float | None = None
    bytes: int | None = None
