"""Every event aqbench journals: frozen, tagged msgspec Structs, and the `AnyEvent` union.

The journal format is designed here once. Imports nothing from the project but the configuration,
whose resolved snapshot RunStarted carries. Schema evolution: add fields only at the end of a class,
with defaults; never retype or reuse a field or a tag without a new SCHEMA_VERSION, whose upgrade of
older journals lives in orchestrator/journal.py. Payloads are Structs; dicts remain only for foreign
data (log fields, AIPerf's aggregate, HTTP bodies kept as evidence).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias, Union

import msgspec

from orchestrator.config import Config
from orchestrator.judge.gates import GateResult
from orchestrator.judge.stats import Summary

__all__ = [
    "SCHEMA_VERSION",
    "Event",
    # payloads
    "HostFacts",
    "ItemRef",
    "AnswerMismatch",
    "PhaseDetail",
    "ResultRow",
    "AiperfSettings",
    "GateCounts",
    "IncompleteAnswer",
    "CompletenessChange",
    "NoticeContext",
    "MemorySummary",
    "WindowStats",
    "AnyEvent",
    "EVENT_TYPES",
    # run
    "RunStarted",
    "RunFinished",
    "PhaseStarted",
    "PhaseFinished",
    # server lifecycle
    "ServerSpawned",
    "ServerStateChanged",
    "ServerReady",
    "ServerHealthChanged",
    "ServerExited",
    "ServerRestarting",
    "OrphanKilled",
    "ResourceSampled",
    "GpuSampled",
    "LogLine",
    # load client
    "AiperfStarted",
    "AiperfExited",
    "ClientRecord",
    "ServerRecord",
    "RequestsInFlight",
    "RequestCorrelated",
    "RequestUnmatched",
    "AccountingChecked",
    # judging
    "CapabilityProbed",
    "VerdictReached",
    "GateEvaluated",
    "ModelResult",
    "SoakWindowClosed",
    "SoakVerdict",
    # diagnostics
    "Warned",
    "Failed",
    "EventsDropped",
    "SubscriberFailed",
    # completeness
    "AnswerIncomplete",
    # appended (kept last for merges)
    "SoakWindowOpened",
    "ProcessSampled",
    # non-inferiority
    "NoninferiorityJudged",
    "NoninferiorityResult",
    "GateCitation",
]

# 2: typed payloads (RunStarted.config/host, Phase*.detail, ModelResult.row, GateEvaluated.detail,
#    Warned/Failed.detail, SoakWindowClosed.summary); journals of version 1 are upgraded on read.
SCHEMA_VERSION = 2

Json = dict[str, Any]  # foreign data only


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag=_snake):
    """Base of every event. The bus stamps `run_id`, `seq`, `ts_ns` and `mono_ns` on publish.

    `ts_ns` is wall-clock `time.time_ns()` (comparable with AIPerf and server records on one host);
    `mono_ns` is `time.monotonic_ns()` of this process (for durations within one run).
    `source` names the producer (`supervisor`, `aiperf`, `correlator`, `ingest:<file>`, ...).
    """

    run_id: str = ""
    seq: int = 0
    ts_ns: int = 0
    mono_ns: int = 0
    source: str = ""


# ---------------------------------------------------------------------------------------- payloads


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
    """Where a gate was read: the file, its revision and the key inside it (`benchmarks.mmlu.quantized_gate`)."""

    file: str
    revision: str = ""
    key: str = ""


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
    gate_key: str = ""
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


# --------------------------------------------------------------------------------------------- run


class RunStarted(Event, frozen=True, kw_only=True):
    """First line of every journal: what ran, with which configuration and tools, where."""

    schema_version: int = SCHEMA_VERSION
    command: str = ""
    argv: list[str] = []
    config_path: str = ""
    config_sha256: str = ""
    config: Config | None = None
    tool_versions: dict[str, str] = {}
    host: HostFacts = HostFacts()
    run_dir: str = ""


class RunFinished(Event, frozen=True, kw_only=True):
    """Last line of a journal that was closed in order. Its absence means the run was interrupted."""

    status: Literal["ok", "failed", "interrupted", "error", "planned"] = "ok"
    exit_code: int = 0
    reason: str = ""
    counts: dict[str, int] = {}


class PhaseStarted(Event, frozen=True, kw_only=True):
    """A named stage began (e.g. `capability`, `correctness`, `aiperf`, `soak_window`)."""

    phase: str
    model: str = ""
    detail: PhaseDetail = PhaseDetail()


class PhaseFinished(Event, frozen=True, kw_only=True):
    """A named stage ended; `outcome` is the stage's verdict word (`passed`, `failed`, `skipped`, ...)."""

    phase: str
    model: str = ""
    outcome: str = ""
    reason: str = ""
    detail: PhaseDetail = PhaseDetail()


# ------------------------------------------------------------------------------- server lifecycle


ServerState = Literal[
    "starting", "ready", "degraded", "unhealthy", "restarting", "stopping", "stopped", "failed"
]


class ServerSpawned(Event, frozen=True, kw_only=True):
    """The server process of one incarnation was started in its own session."""

    incarnation: int
    pid: int
    argv: list[str]
    cwd: str = ""
    port: int = 0
    records_path: str = ""


class ServerStateChanged(Event, frozen=True, kw_only=True):
    """Every transition of the supervisor's state machine, with why."""

    incarnation: int
    state: ServerState
    previous: str = ""
    reason: str = ""


class ServerReady(Event, frozen=True, kw_only=True):
    """Readiness and model listing both passed; `models` is what `/v1/models` returned."""

    incarnation: int
    pid: int
    startup_ns: int
    probes: int = 0
    models: list[Json] = []
    url: str = ""


class ServerHealthChanged(Event, frozen=True, kw_only=True):
    """The health probe's result changed (only changes are journaled, not every probe)."""

    incarnation: int
    healthy: bool
    degraded: bool = False
    status_code: int = 0
    consecutive_failures: int = 0
    detail: str = ""


class ServerExited(Event, frozen=True, kw_only=True):
    """The server process ended. `expected` is true when it died of the supervisor's own stop."""

    incarnation: int
    pid: int
    returncode: int | None = None
    signal: str = ""
    expected: bool = False
    during: Literal["startup", "run", "stop"] = "run"
    output_tail: list[str] = []
    # Wall clock when the exit was seen (the wait returned), before the output tail was collected; 0 in
    # journals written before this field (then ts_ns, a little later, stands in for it).
    exited_unix_ns: int = 0


class ServerRestarting(Event, frozen=True, kw_only=True):
    """The restart policy chose to start a new incarnation after `backoff_s`."""

    incarnation: int
    attempt: int
    backoff_s: float
    reason: str = ""


class OrphanKilled(Event, frozen=True, kw_only=True):
    """A descendant that escaped the server's process group was found after stop and killed."""

    incarnation: int
    pid: int
    cmdline: list[str] = []
    signal: str = "SIGKILL"
    # "subreaper" (re-parented to aqbench), "sample" (seen in a resource sample), "marker" (environment
    # token); "" in journals written before this field.
    found_by: str = ""


class ResourceSampled(Event, frozen=True, kw_only=True):
    """One sample over the server's whole process tree."""

    incarnation: int
    pid: int
    rss_bytes: int
    uss_bytes: int | None = None
    cpu_percent: float = 0.0
    threads: int = 0
    open_files: int = 0
    children: int = 0
    gpu_memory_bytes: int | None = None
    # Taken before the incarnation was ready (start-up memory, never its peak); `trigger` is "period",
    # "ready" (at readiness) or "stop" (just before the stop signal); "" in older journals.
    pre_ready: bool = False
    trigger: str = ""


class GpuSampled(Event, frozen=True, kw_only=True):
    """Device-wide GPU figures (NVML), sampled beside the process tree when a GPU is present."""

    index: int
    name: str = ""
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    utilization_percent: float = 0.0


class LogLine(Event, frozen=True, kw_only=True):
    """One line printed by a child process or read from a log file; `fields` when it was JSON."""

    stream: str
    text: str = ""
    fields: Json | None = None
    level: str = ""
    incarnation: int = 0


# ---------------------------------------------------------------------------------- load client


class AiperfStarted(Event, frozen=True, kw_only=True):
    """An AIPerf run was launched; `shell` is the copy-paste command line."""

    window: str
    argv: list[str]
    shell: str
    artifact_dir: str
    pid: int = 0
    version: str = ""
    fingerprint: str = ""
    input_file: str = ""


class AiperfExited(Event, frozen=True, kw_only=True):
    """An AIPerf run ended and was judged by its files (`classification`), not its exit code."""

    window: str
    returncode: int | None
    classification: Literal["complete", "partial", "cancelled", "failed"]
    reason: str = ""
    aggregate: Json = {}
    duration_ns: int = 0


Phase = Literal["warmup", "profiling", "unknown"]


class ClientRecord(Event, frozen=True, kw_only=True):
    """One request as the client saw it, from the live tap (`via="tap"`) or the export (`"export"`)."""

    request_id: str
    via: Literal["tap", "export", "ingest", "probe"] = "export"
    window: str = ""
    correlation_id: str = ""
    conversation_id: str = ""
    phase: Phase = "unknown"
    session_num: int | None = None
    worker_id: str = ""
    credit_issued_ns: int | None = None
    request_start_ns: int | None = None
    request_ack_ns: int | None = None
    request_end_ns: int | None = None
    status_code: int | None = None
    error_code: int | None = None
    error_type: str = ""
    error_message: str = ""
    was_cancelled: bool = False
    request_latency_ms: float | None = None
    ttft_ms: float | None = None
    output_tokens: int | None = None
    answer: str | None = None
    server_timing_ms: float | None = None
    echoed_request_id: str = ""


class ServerRecord(Event, frozen=True, kw_only=True):
    """One line of the server's `--records` file (trtmc-server fields plus the reference's audio)."""

    request_id: str
    route: str = ""
    model: str = ""
    replica: str = ""
    status: int = 0
    handler_ms: float | None = None
    admission_ms: float | None = None
    model_call_ms: float | None = None
    timing_scope: str = ""
    worker_roundtrip_ms: float | None = None
    setup_ms: float | None = None
    prefill_ms: float | None = None
    decode_ms: float | None = None
    completion_tokens: int | None = None
    streaming: str = ""
    incarnation: int = 0
    audio: Json | None = None
    error_code: str = ""
    end_unix_ns: int | None = None


class RequestsInFlight(Event, frozen=True, kw_only=True):
    """The correlator's answer to a crash: which request ids were open in that incarnation."""

    incarnation: int
    request_ids: list[str]
    reason: str = "server_crash"
    # The client's concurrency when known (0: rate mode or unknown): more in flight than that is a breach.
    limit: int = 0
    rule: str = ""


CauseCode = Literal[
    "ok",
    "http_4xx",
    "http_5xx",
    "server_busy",
    "timeout",
    "connection",
    "server_crash",
    "cancelled",
    "unmatched",
    "duplicate",
]


class RequestCorrelated(Event, frozen=True, kw_only=True):
    """One request joined across client and server, mapped to its dataset item and arm."""

    request_id: str
    window: str = ""
    phase: Phase = "unknown"
    conversation_id: str = ""
    item_id: str = ""
    arm: str = ""
    ok: bool = False
    cause: CauseCode = "ok"
    http_status: int | None = None
    error_message: str = ""
    answer: str | None = None
    request_start_ns: int | None = None
    request_end_ns: int | None = None
    request_latency_ms: float | None = None
    client_lifecycle_ms: float | None = None
    handler_ms: float | None = None
    worker_roundtrip_ms: float | None = None
    model_call_ms: float | None = None
    timing_scope: str = ""
    incarnation: int = 0
    audio_seconds: float | None = None
    audio_bytes: int | None = None
    has_client: bool = True
    has_server: bool = True
    # Which rule gave `cause` when a server exit was near: "open_at_exit" (sent before the exit on a
    # connection that then broke or got no answer), "refused" (never connected: `connection` whatever
    # the timing), "sent_after_exit"; "" when no exit was involved.
    cause_rule: str = ""
    # The server record's count (None without one): the load path's only sign of truncation.
    completion_tokens: int | None = None


class RequestUnmatched(Event, frozen=True, kw_only=True):
    """A half that never met its other half (or a duplicate id), with the cause."""

    request_id: str
    half: Literal["client", "server"]
    cause: Literal["no_server_record", "no_client_record", "duplicate_id", "timeout"]
    window: str = ""
    phase: Phase = "unknown"
    conversation_id: str = ""


class AccountingChecked(Event, frozen=True, kw_only=True):
    """End-of-window invariant: issued = ok + errors by cause + in_flight, in_flight = 0, ids unique."""

    window: str
    balanced: bool
    issued: dict[str, int] = {}
    by_cause: dict[str, dict[str, int]] = {}
    in_flight: int = 0
    duplicates: list[str] = []
    server_without_client: list[str] = []
    client_without_server: list[str] = []
    problems: list[str] = []
    # Per phase: ok / http_error / transport_error / timeout / cancelled / in_flight (sums to issued).
    by_category: dict[str, dict[str, int]] = {}
    # Per phase: what AIPerf itself says it issued (phase_manifest.json), when known.
    expected: dict[str, int] = {}


# ----------------------------------------------------------------------------------- judging


class CapabilityProbed(Event, frozen=True, kw_only=True):
    """One capability check of a model: transport, conditioning, text-only or transcription-only."""

    model: str
    check: Literal["transport", "conditioning", "text_only", "transcription_only"]
    passed: bool
    reason: str = ""
    evidence: Json = {}


class VerdictReached(Event, frozen=True, kw_only=True):
    """One answer scored against its dataset item."""

    model: str
    item_id: str
    arm: str
    path: Literal["http", "native", "aiperf", "reference"] = "http"
    # `incomplete`: the answer has a completeness defect (AnswerIncomplete); never counted right.
    verdict: Literal["correct", "wrong", "unparsed", "error", "incomplete"]
    answer: str | None = None
    gold: str = ""
    item_kind: str = ""
    scoring: str = ""
    request_id: str = ""
    detail: str = ""


class GateEvaluated(Event, frozen=True, kw_only=True):
    """A correctness gate from bench.toml, applied exactly as stated (never rounded or lowered)."""

    model: str
    gate: str
    required: float
    observed: float
    passed: bool
    scope: str = ""
    detail: GateCounts = GateCounts()


class ModelResult(Event, frozen=True, kw_only=True):
    """The published result row of one checkpoint (versioned by the journal's schema)."""

    model: str
    status: str
    failed_stage: str = ""
    row: ResultRow = ResultRow()


class SoakWindowClosed(Event, frozen=True, kw_only=True):
    """Per-window aggregates of a soak (kept in memory; details stay in the journal)."""

    window: str
    index: int
    summary: WindowStats | None = None


class SoakVerdict(Event, frozen=True, kw_only=True):
    """One soak verdict with the numbers behind it; `final` false at checkpoints."""

    metric: str
    passed: bool
    final: bool = False
    detail: Json = {}
    # pass, fail or inconclusive (orchestrator.judge.outcome); "" in journals older than the three outcomes.
    outcome: str = ""
    # The verdict's own words and numbers (trend verdicts: slope and its interval against the limit, per
    # hour in `unit`); `detail` keeps the metric's series and windows. Empty in older journals.
    reason: str = ""
    windows_closed: int = 0
    slope: float | None = None
    interval: list[float] | None = None
    limit: float | None = None
    unit: str = ""


# ---------------------------------------------------------------------------------- diagnostics


class Warned(Event, frozen=True, kw_only=True):
    """Something the user should know that does not stop the run."""

    code: str
    message: str
    detail: NoticeContext = NoticeContext()


class Failed(Event, frozen=True, kw_only=True):
    """An error that stops a stage or the run; journaled before anything is torn down."""

    code: str
    message: str
    detail: NoticeContext = NoticeContext()


class EventsDropped(Event, frozen=True, kw_only=True):
    """A lossy subscriber dropped its oldest events; `dropped` is the total so far."""

    subscriber: str
    dropped: int


class SubscriberFailed(Event, frozen=True, kw_only=True):
    """A bus subscriber raised; `best_effort` subscribers fail alone, others cancel the run."""

    subscriber: str
    error: str
    best_effort: bool = False


# -------------------------------------------------------------------------------- completeness


class AnswerIncomplete(Event, frozen=True, kw_only=True):
    """An answer that is not whole (judge/completeness.py): its defects, the first one primary.

    One per defective answer on every path: `capability` (the probe), `http` and `native` (correctness
    arms), `aiperf` (under load, qualify or soak). `max_tokens` is the request's limit (None: none
    asked); `finish_reason` and `completion_tokens` are what the server said (None: not said).
    """

    model: str
    path: Literal["capability", "http", "native", "aiperf", "reference"]
    defects: list[str]
    details: list[str] = []
    item_id: str = ""
    arm: str = ""
    request_id: str = ""
    answer: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    max_tokens: int | None = None


class SoakWindowOpened(Event, frozen=True, kw_only=True):
    """A soak window's time cut: requests a load client starts at or after `start_unix_ns` (wall clock)
    belong to it until the next window opens. Published ahead of its start, so no request precedes it."""

    window: str
    index: int
    start_unix_ns: int
    segment: int = 0


class ProcessSampled(Event, frozen=True, kw_only=True):
    """Resident memory of one observer-side process tree: `orchestrator` (aqbench itself) or `aiperf`."""

    role: Literal["orchestrator", "aiperf"]
    pid: int
    rss_bytes: int
    processes: int = 1


# ------------------------------------------------------------------------------ non-inferiority


class NoninferiorityJudged(Event, frozen=True, kw_only=True):
    """A model judged against its reference on paired answers: the decision and the gate it used."""

    model: str
    result: NoninferiorityResult


# The union is built from the classes above so that adding an event is one edit in one place.
EVENT_TYPES: tuple[type[Event], ...] = tuple(
    cls for cls in Event.__subclasses__() if cls.__module__ == __name__
)
if TYPE_CHECKING:
    # The type checker cannot build a union at run time: to it every event is an Event (narrow with
    # isinstance); msgspec decodes the real tagged union below.
    AnyEvent: TypeAlias = Event
else:
    AnyEvent = Union[EVENT_TYPES]  # noqa: UP007 - built from a tuple at run time, which `|` cannot do
