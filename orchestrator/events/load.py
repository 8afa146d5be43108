"""Events of the load: AIPerf's runs, client and server records, and their correlation and accounting."""

from __future__ import annotations

from typing import Literal

import msgspec

from orchestrator.events.base import Event
from orchestrator.events.payloads import AudioFacts, Json

__all__ = ["AiperfStarted", "AiperfExited", "ClientRecord", "ServerRecord", "RequestsInFlight", "RequestCorrelated", "RequestUnmatched", "AccountingChecked", "Phase", "CauseCode"]


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
    # A window of a phased run (several windows in one AIPerf process, started as its phase starts): this
    # window's load as AIPerf flags, which `argv` (the process's, with a --config phases file) does not carry.
    load: list[str] = []
    # When the process was spawned (wall clock ns; 0 in older journals): a window held at its gate (a sweep's
    # first batch, spawned beside the capability probe) starts later than its process.
    spawned_ns: int = 0


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
    # The AIPerf run's name (a soak window is another thing); journaled as `window`, as it always was.
    aiperf_run: str = msgspec.field(default="", name="window")
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
    audio: AudioFacts | None = None
    error_code: str = ""
    end_unix_ns: int | None = None
    fault_latency_ms: float = 0.0  # latency the reference server injected into this request (0: none, or not said)


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
    # Per phase: what AIPerf itself says it issued, when known.
    expected: dict[str, int] = {}
    # Per phase: where `expected` comes from: "aiperf_log" (its sending-complete line: requests sent) or
    # "phase_manifest" (phase_manifest.json: records kept, which misses a request AIPerf lost).
    expected_from: dict[str, str] = {}
    # Requests that started in an earlier window, closed on time before they ended, counted here instead
    # (a soak's window closes within a second of its end; every request still counts in exactly one window).
    carried: int = 0
