"""The journal's payload Structs: what events carry beside their own fields (phase details, result rows,
window statistics, ...). Typed, so a renamed field is a type error, not a silently empty report cell.
Schema evolution as for events: add fields at the end with defaults.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.judge.gates import GateResult
from orchestrator.judge.stats import Summary

__all__ = ["Json", "HostFacts", "ItemRef", "AnswerMismatch", "AiperfSettings", "IncompleteAnswer", "CompletenessChange", "PhaseDetail", "GateCitation", "NoninferiorityResult", "ResultRow", "GateCounts", "MemorySummary", "WindowStats", "NoticeContext"]

Json = dict[str, Any]  # foreign data only


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


class PhaseDetail(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a phase reports beside its outcome. Each phase fills its own fields (named in the comments);
    unset fields stay at their defaults and are not written."""

    # model: the checkpoint's identity as bench.toml states it
    checkpoint: str = ""
    profile: str = ""
    revision: str = ""
    family: str = ""
    native_task: str = ""
    precision: str = ""
    bundle: str = ""
    # server
    argv: list[str] = []
    base_url: str = ""
    bundle_sha256: str = ""
    models: Any = None  # the server's own /v1/models answer (foreign)
    # dataset
    name: str = ""
    identity: str = ""
    path: str = ""
    items: int | None = None
    arms: list[str] = []
    # correctness
    requests: int | None = None
    native: bool | None = None
    failing_items: list[str | ItemRef] = []
    # identity and aiperf
    compared: int | None = None
    mismatches: list[AnswerMismatch] = []
    identity_mismatches: list[AnswerMismatch] = []
    # aiperf workload (qualify; run-aiperf adds rows, window, classification, balanced)
    warmup_requests: int | None = None
    concurrency: int | None = None
    request_rate: float | None = None
    streaming: bool | None = None
    request_timeout_s: float | None = None
    settings: AiperfSettings | None = None
    rows: int | None = None
    window: str = ""
    classification: str = ""
    balanced: bool | None = None
    # soak
    duration_s: float | None = None
    window_s: float | None = None
    checkpoint_every_s: float | None = None
    limits: dict[str, float | int] = {}
    windows: int | None = None
    # completeness (capability, correctness, aiperf)
    answers_checked: int | None = None
    incomplete: list[IncompleteAnswer] = []
    completeness_changes: list[CompletenessChange] = []


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


class ResultRow(msgspec.Struct, frozen=True, kw_only=True):
    """The published result row of one checkpoint, beside its status."""

    checkpoint: str = ""
    profile: str = ""
    revision: str = ""
    family: str = ""
    native_task: str = ""
    precision: str = ""
    bundle_sha256: str = ""
    qualify_command: str = ""
    aiperf_command: str = ""
    reason: str = ""
    noninferiority: NoninferiorityResult | None = None


class GateCounts(msgspec.Struct, frozen=True, kw_only=True):
    """The counts behind a gate's observed rate."""

    correct: int = 0
    total: int = 0
    failing_items: list[str] = []


class MemorySummary(msgspec.Struct, frozen=True, kw_only=True):
    """Resource samples taken while the window ran (bytes); None when no sample fell inside it."""

    samples: int = 0
    start_bytes: int | None = None
    end_bytes: int | None = None
    peak_bytes: int | None = None
    median_bytes: float | None = None


class WindowStats(msgspec.Struct, frozen=True, kw_only=True):
    """The aggregates of one closed window (profiling phase unless named otherwise)."""

    window: str
    index: int
    start_unix_ns: int
    end_unix_ns: int
    issued: int = 0
    ok: int = 0
    errors: int = 0
    by_cause: dict[str, int] = {}
    warmup_issued: int = 0
    error_rate: float | None = None
    throughput_rps: float | None = None
    client_latency_ms: Summary = Summary()
    server_latency_ms: Summary = Summary()
    model_call_ms: Summary = Summary()
    correct: int = 0
    scored: int = 0
    verdicts: dict[str, int] = {}
    gates: list[GateResult] = []
    correctness_passed: bool | None = None
    rss: MemorySummary = MemorySummary()
    gpu_memory: MemorySummary = MemorySummary()
    restarts: int = 0
    unexpected_exits: int = 0
    incarnations: list[int] = []
    aiperf_classification: str = ""
    accounting_balanced: bool | None = None
    # Seconds without load between the previous window's last answer and this window's first request.
    gap_before_s: float | None = None
    # AIPerf's own timeline (wall-clock ns): process launch, first and last request of any phase, exit.
    aiperf_launch_unix_ns: int | None = None
    first_request_unix_ns: int | None = None
    last_request_unix_ns: int | None = None
    aiperf_exit_unix_ns: int | None = None
    # The observer's own processes while the window ran: aqbench itself, and AIPerf's process tree.
    orchestrator_rss: MemorySummary = MemorySummary()
    aiperf_rss: MemorySummary = MemorySummary()
    # The AIPerf process (1, 2, ...) whose load the window was cut from: a new one follows a failure.
    segment: int = 0
    # Per dataset item, the median latency of its ok profiling requests in this window (server handler_ms,
    # client latency where the server gave none): bounded by the dataset's size, not the request count.
    item_server_ms: dict[str, float] = {}
    item_client_ms: dict[str, float] = {}

    @property
    def startup_s(self) -> float | None:
        """AIPerf's start-up: its launch to its first request."""
        return _span_s(self.aiperf_launch_unix_ns, self.first_request_unix_ns)

    @property
    def exit_s(self) -> float | None:
        """AIPerf's exit: its last answer to its process's end (it writes its exports in between)."""
        return _span_s(self.last_request_unix_ns, self.aiperf_exit_unix_ns)

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.end_unix_ns - self.start_unix_ns) / 1e9)


def _span_s(start_ns: int | None, end_ns: int | None) -> float | None:
    return (end_ns - start_ns) / 1e9 if start_ns is not None and end_ns is not None else None


class NoticeContext(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a warning or failure belongs."""

    model: str = ""
    pid: int | None = None
    incarnation: int | None = None
