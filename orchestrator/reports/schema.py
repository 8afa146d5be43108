"""The versioned RunReport: what report.json holds, as msgspec Structs. Data only, no logic."""

from __future__ import annotations

import msgspec

from orchestrator.base.identity import ModelIdentity
from orchestrator.events import (
    AiperfSettings,
    CapabilityEvidence,
    GpuIdentity,
    Json,
    NoninferiorityResult,
    RunKey,
    Summary,
    WindowStats,
)

__all__ = [
    "REPORT_VERSION",
    "GpuFacts",
    "RunReport",
    "Provenance",
    "DatasetIdentity",
    "TornInfo",
    "ModelRow",
    "StageOutcome",
    "CapabilityCheck",
    "PassRate",
    "AudioLift",
    "PathCorrectness",
    "GateRow",
    "ErrorAnswer",
    "Restart",
    "ExpectedStop",
    "StateSpan",
    "FailingItem",
    "Mismatch",
    "IncompleteAnswer",
    "CompletenessLine",
    "IdentityResult",
    "AiperfRun",
    "PhaseCounts",
    "Counts",
    "Timing",
    "ServerExit",
    "ServerFacts",
    "Commands",
    "WindowSummary",
    "LatencyPoint",
    "MemoryPoint",
    "Histogram",
    "GridCell",
    "GridRow",
    "VerdictGrid",
    "ModelCharts",
    "Notice",
    "Summary",
]

# 2: typed values where dicts were: a capability check's evidence is tagged by `kind`, a window's `soak` and a
#    row's `aiperf_settings` are null where they were {}; `served_models` lists the /v1/models entries.
# Evolution follows the journal's rule: add fields at the end with defaults, bump REPORT_VERSION when a field changes
# meaning. Times are unix ns (`_unix_ns`) plus ISO strings for people; units are in names.
REPORT_VERSION = 2


class _S(msgspec.Struct, frozen=True, kw_only=True):
    pass


class DatasetIdentity(_S, frozen=True, kw_only=True):
    """The dataset a run used: its name, content hash (`identity`), folder, size and arms."""

    name: str = ""
    identity: str = ""
    path: str = ""
    items: int = 0
    arms: list[str] = []


class TornInfo(_S, frozen=True, kw_only=True):
    """The journal's last line did not decode (a writer killed mid-line); the report still built."""

    line: int
    text: str


class Provenance(_S, frozen=True, kw_only=True):
    """Where, when and with what the run ran, and how it ended (`interrupted` when RunFinished is missing)."""

    run_id: str = ""
    command: str = ""
    argv: list[str] = []
    journal_schema_version: int = 0
    aqbench_version: str = ""
    aqbench_commit: str = ""
    aiperf_version: str = ""
    aiperf_fingerprint: str = ""
    python: str = ""
    os: str = ""
    cpu: str = ""
    cpus: int = 0
    gpus: list[str] = []
    hostname: str = ""
    dataset: DatasetIdentity | None = None
    config_path: str = ""
    config_sha256: str = ""
    started_unix_ns: int | None = None
    finished_unix_ns: int | None = None
    started_at: str = ""
    finished_at: str = ""
    duration_s: float | None = None
    status: str = ""
    exit_code: int | None = None
    reason: str = ""
    interrupted: bool = False
    torn_line: TornInfo | None = None
    events: int = 0
    # Each GPU as NVML named it (GpuIdentified): what the owners' qualification records as host.gpu.
    gpu_identity: list[GpuIdentity] = []


class StageOutcome(_S, frozen=True, kw_only=True):
    """One stage of one model as journaled (PhaseStarted/PhaseFinished); `outcome` "" = never finished."""

    phase: str
    outcome: str = ""
    reason: str = ""
    duration_s: float | None = None


class CapabilityCheck(_S, frozen=True, kw_only=True):
    """One capability probe with the server's evidence (e.g. the 400 body)."""

    check: str
    passed: bool
    reason: str = ""
    evidence: CapabilityEvidence | None = None


class PassRate(_S, frozen=True, kw_only=True):
    """Verdict counts of one slice; `rate` = correct / total (None when total is 0)."""

    total: int = 0
    correct: int = 0
    wrong: int = 0
    unparsed: int = 0
    error: int = 0
    rate: float | None = None
    incomplete: int = 0  # answers with a completeness defect (never counted correct)


class AudioLift(_S, frozen=True, kw_only=True):
    """How much the audio helps: audio-arm rate minus silence-arm rate over the items with a silence-arm
    verdict (every item, or the conditioning subset), and minus the transcript-arm rate over the speech items
    with a transcript-arm verdict. `audio_rate` is over every audio-arm item."""

    audio_rate: float | None = None
    silence_rate: float | None = None
    vs_silence: float | None = None
    speech_items: int = 0
    audio_rate_speech: float | None = None
    transcript_rate: float | None = None
    vs_transcript: float | None = None


class PathCorrectness(_S, frozen=True, kw_only=True):
    """Correctness of one path (`http`, `native`, or `aiperf` = under load) by arm and by kind x arm."""

    path: str
    by_arm: dict[str, PassRate] = {}
    by_kind: dict[str, dict[str, PassRate]] = {}
    audio_lift: AudioLift = AudioLift()


class GateRow(_S, frozen=True, kw_only=True, omit_defaults=True):
    """A gate from bench.toml with what was required and what was observed (never rounded); `applicable`
    is written only when False (a stage that had no answer in the gate's scope)."""

    gate: str
    scope: str = ""
    required: float
    observed: float
    passed: bool
    applicable: bool = True  # False: the stage had no answer in the gate's scope (not a failure)


class FailingItem(_S, frozen=True, kw_only=True):
    """An item that failed its gate arm, with the answer given and the gold answer."""

    item_id: str
    arm: str = ""
    kind: str = ""
    path: str = ""
    verdict: str = ""
    answer: str | None = None
    gold: str = ""


class IncompleteAnswer(_S, frozen=True, kw_only=True):
    """One answer that was not whole, beside its verdict (`""` on the capability path, which scores none)."""

    item_id: str = ""
    arm: str = ""
    request_id: str = ""
    defects: list[str] = []
    details: list[str] = []
    verdict: str = ""
    answer: str | None = None


class CompletenessLine(_S, frozen=True, kw_only=True):
    """Completeness of one model's answers on one path (`capability`, `http`, `native`, `aiperf`):
    answers checked, how many were whole, each defect (primary or not) with its count, and the items."""

    path: str
    checked: int = 0
    complete: int = 0
    defects: dict[str, int] = {}
    items: list[IncompleteAnswer] = []
    items_left_out: int = 0


class Mismatch(_S, frozen=True, kw_only=True):
    """Two answers to the same item and arm that should have been identical; `answers` by path."""

    item_id: str = ""
    arm: str = ""
    answers: dict[str, str | None] = {}
    request_id: str = ""


class IdentityResult(_S, frozen=True, kw_only=True):
    """Native/HTTP identity: outcome (`passed`, `failed`, `skipped`, "" = not reached) and differences."""

    outcome: str = ""
    compared: int = 0
    mismatches: list[Mismatch] = []


class AiperfRun(_S, frozen=True, kw_only=True):
    """One AIPerf run: the exact command, tool identity and how it was judged by its files."""

    window: str
    command: str = ""
    version: str = ""
    fingerprint: str = ""
    artifact_dir: str = ""
    classification: str = ""
    returncode: int | None = None
    reason: str = ""
    duration_s: float | None = None


class PhaseCounts(_S, frozen=True, kw_only=True):
    """Requests of one AIPerf phase: issued = ok + errors; errors split by cause."""

    issued: int = 0
    ok: int = 0
    errors: int = 0
    by_cause: dict[str, int] = {}
    # Errors near a server exit by the rule that classified them ("server_crash/open_at_exit", ...).
    by_rule: dict[str, int] = {}


class ErrorAnswer(_S, frozen=True, kw_only=True):
    """Failed requests of one phase, cause and HTTP status that got the same answer (`message`: the server's
    body as AIPerf recorded it, or the client's error), with how many did."""

    phase: str
    cause: str
    http_status: int | None = None
    count: int = 0
    message: str = ""


class Counts(_S, frozen=True, kw_only=True):
    """Warmup and profiling apart; unmatched halves by cause; the accounting invariant's verdict."""

    warmup: PhaseCounts = PhaseCounts()
    profiling: PhaseCounts = PhaseCounts()
    other: PhaseCounts = PhaseCounts()
    unmatched: dict[str, int] = {}
    accounting_balanced: bool | None = None
    accounting_problems: list[str] = []
    late_events: int = 0
    # What the failed requests were answered, grouped; a few distinct answers kept per phase, cause and status.
    error_answers: list[ErrorAnswer] = []


class Timing(_S, frozen=True, kw_only=True):
    """Profiling-phase timing of successful requests, client and server kept apart (exact type-7
    percentiles, see orchestrator/judge/stats.py); rates over the span first start -> last end."""

    request_latency_ms: Summary = Summary()
    client_lifecycle_ms: Summary = Summary()
    handler_ms: Summary = Summary()
    model_call_ms: Summary = Summary()
    worker_roundtrip_ms: Summary = Summary()
    timing_scope: str = ""
    span_s: float | None = None
    requests_per_s: float | None = None
    audio_seconds: float = 0.0
    audio_seconds_per_s: float | None = None


class ServerExit(_S, frozen=True, kw_only=True):
    """A server incarnation that ended when it should not have, with the evidence."""

    incarnation: int
    pid: int
    returncode: int | None = None
    signal: str = ""
    during: str = ""
    output_tail: list[str] = []


class Restart(_S, frozen=True, kw_only=True):
    """The supervisor decided, `at_s` run seconds in, to start `incarnation` after `backoff_s` because of `reason`;
    `spawned_s` is when that incarnation was started (None: never, the run ended first)."""

    incarnation: int
    attempt: int
    at_s: float
    backoff_s: float = 0.0
    reason: str = ""
    spawned_s: float | None = None
    # What ended the previous incarnation (ServerRestarting.cause): "exited", "unready", "unresponsive", ...
    cause: str = ""


class StateSpan(_S, frozen=True, kw_only=True):
    """A span the server was `degraded` or `unhealthy`, from `from_s` to `until_s` run seconds (None: until the
    journal ends), with the readiness answer that began it and the state that ended it."""

    state: str
    incarnation: int
    from_s: float
    until_s: float | None = None
    reason: str = ""
    ended_by: str = ""


class ExpectedStop(_S, frozen=True, kw_only=True):
    """An incarnation stopped by the supervisor's own signal whose output ends in a traceback: the server's
    handling of that signal (uvicorn re-raises SIGINT as KeyboardInterrupt), expected and not an error."""

    incarnation: int
    returncode: int | None = None
    signal: str = ""
    last_line: str = ""


class GpuFacts(_S, frozen=True, kw_only=True):
    """One GPU over the server's samples after readiness (NVML; docs/gpu.md says what each figure means).

    Utilisation is the mean of NVML's own samples (about one per 1/6 s) over each sample period, averaged;
    `busy_percent` the same over the AIPerf phase (qualify's aiperf, run-aiperf, the soak's load) only."""

    index: int
    name: str = ""
    uuid: str = ""
    samples: int = 0
    utilization_mean_percent: float | None = None
    utilization_max_percent: float | None = None
    busy_percent: float | None = None
    power_mean_w: float | None = None
    power_max_w: float | None = None
    temperature_max_c: int | None = None
    sm_clock_mean_mhz: float | None = None
    sm_clock_min_mhz: int | None = None
    # Samples in which each clock event reason held the clocks down.
    throttle_reasons: dict[str, int] = {}
    peak_memory_used_bytes: int | None = None
    peak_tree_memory_bytes: int | None = None
    # "tree" (per process) or "device" (a PID namespace hid the tree's processes from NVML: device-wide).
    memory_scope: str = "tree"


class ServerFacts(_S, frozen=True, kw_only=True):
    """The supervisor's facts for one model's server."""

    argv: list[str] = []
    incarnations: int = 0
    restarts: int = 0
    unexpected_exits: list[ServerExit] = []
    orphans_killed: int = 0
    startup_s: float | None = None
    peak_rss_bytes: int | None = None
    peak_gpu_memory_bytes: int | None = None
    peak_device_memory_used_bytes: int | None = None
    # The server's `/v1/models` entries as ServerReady journaled them (foreign: payloads.FOREIGN_JSON).
    served_models: list[Json] = []
    restart_causes: list[Restart] = []
    state_spans: list[StateSpan] = []
    expected_stops: list[ExpectedStop] = []
    gpus: list[GpuFacts] = []
    # Escaped descendants that had died already (with their parent) and were reaped as zombies (OrphanReaped).
    orphans_reaped: int = 0


class Commands(_S, frozen=True, kw_only=True):
    """The commands that reproduce this row."""

    qualify: str = ""
    aiperf: str = ""


class WindowSummary(_S, frozen=True, kw_only=True):
    """One AIPerf window (qualify's `<model>/aiperf`, soak's `soak/w0001`, ...): counts and timing."""

    window: str
    model: str = ""
    aiperf: AiperfRun | None = None
    counts: Counts = Counts()
    timing: Timing = Timing()
    load_correctness: PassRate = PassRate()
    first_start_unix_ns: int | None = None
    last_end_unix_ns: int | None = None
    # A soak window's statistics as SoakWindowClosed journaled them; None for other windows.
    soak: WindowStats | None = None


class ModelRow(ModelIdentity, frozen=True, kw_only=True):
    """The result row of one checkpoint (its identity and more); status as ModelResult said, or
    `interrupted` without one."""

    model: str
    bundle_sha256: str = ""
    dataset_name: str = ""
    dataset_identity: str = ""
    status: str = ""
    failed_stage: str = ""
    reason: str = ""
    stages: list[StageOutcome] = []
    capability: list[CapabilityCheck] = []
    correctness: dict[str, PathCorrectness] = {}
    gates: list[GateRow] = []
    failing_items: list[FailingItem] = []
    identity: IdentityResult = IdentityResult()
    load_identity_mismatches: list[Mismatch] = []
    aiperf: AiperfRun | None = None
    aiperf_settings: AiperfSettings | None = None
    counts: Counts = Counts()
    timing: Timing = Timing()
    server: ServerFacts = ServerFacts()
    commands: Commands = Commands()
    windows: list[str] = []
    completeness: list[CompletenessLine] = []
    # The model against its reference (paired non-inferiority); None when it has no reference.
    noninferiority: NoninferiorityResult | None = None
    # What the row depends on (orchestrator/runkey/digests.py); None in journals written before keys existed.
    keyed_by: RunKey | None = None
    # The GPUs the server used, as NVML named them, and how busy they were over the row's AIPerf phase
    # (mean utilisation, %; None without GPU figures).
    gpus: list[GpuIdentity] = []
    gpu_busy_percent: float | None = None


class LatencyPoint(_S, frozen=True, kw_only=True):
    """One request on the latency-over-time picture (seconds since the run started)."""

    t_s: float
    client_ms: float | None = None
    handler_ms: float | None = None
    model_call_ms: float | None = None


class MemoryPoint(_S, frozen=True, kw_only=True):
    """One resource sample on the memory-over-time picture."""

    t_s: float
    rss_bytes: int
    gpu_memory_bytes: int | None = None


class Histogram(_S, frozen=True, kw_only=True):
    """Latency distributions on shared linear bins: `edges_ms` has one more entry than each count list."""

    edges_ms: list[float] = []
    counts: dict[str, list[int]] = {}


class GridCell(_S, frozen=True, kw_only=True):
    """The verdict of one item in one arm (answer kept short)."""

    verdict: str
    answer: str | None = None
    gold: str = ""


class GridRow(_S, frozen=True, kw_only=True):
    """One dataset item across arms."""

    item_id: str
    kind: str = ""
    cells: dict[str, GridCell] = {}


class VerdictGrid(_S, frozen=True, kw_only=True):
    """Items by arm for one path; `truncated` counts items beyond the grid's bound."""

    path: str
    arms: list[str] = []
    rows: list[GridRow] = []
    truncated: int = 0


class ModelCharts(_S, frozen=True, kw_only=True):
    """What the pictures need, downsampled to a bounded number of points per series."""

    latency: list[LatencyPoint] = []
    latency_stride: int = 1
    histogram: Histogram = Histogram()
    memory: list[MemoryPoint] = []
    memory_stride: int = 1
    grids: list[VerdictGrid] = []


class Notice(_S, frozen=True, kw_only=True):
    """Something the run journaled for people: a warning, a failure, dropped events, a torn line."""

    kind: str
    code: str = ""
    message: str = ""
    model: str = ""


class RunReport(_S, frozen=True, kw_only=True):
    """report.json: provenance, one row per model, per-window summaries, notices and chart data."""

    report_version: int = REPORT_VERSION
    provenance: Provenance = Provenance()
    rows: list[ModelRow] = []
    windows: list[WindowSummary] = []
    notices: list[Notice] = []
    charts: dict[str, ModelCharts] = {}
