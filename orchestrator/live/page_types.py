"""The live page's shapes: what the page shows (PageState and its rows) and the changes it applies (Change).
Plain typed values; no logic."""

from __future__ import annotations

from typing import Literal

import msgspec

from orchestrator.reports import schema
from orchestrator.reports.error_kinds import ErrorKind
from orchestrator.reports.schema import PhaseCounts

__all__ = ["PageState", "Change", "RunInfo", "Counters", "WindowRow", "ModelRow", "VerdictRow", "PointRow",
           "CampaignModelRow", "SloState", "ServerInfo", "LatencyPoint", "MemoryPoint", "InFlightPoint", "ModelSeries"]


class _S(msgspec.Struct, frozen=True, kw_only=True):
    pass


class RunInfo(_S, frozen=True, kw_only=True):
    """The run and how far it got: windows closed of planned (soak), models finished of configured (qualify)."""

    run_id: str = ""
    command: str = ""
    started_unix_ns: int = 0
    status: str = "running"
    reason: str = ""
    finished_unix_ns: int = 0
    phase: str = ""
    done: int = 0
    total: int = 0
    unit: str = ""
    duration_s: float | None = None
    # A soak's window and checkpoint lengths: when its first window closes and its first verdicts come.
    window_s: float | None = None
    checkpoint_s: float | None = None
    # Why each table is still empty (table id -> sentence), said in place of its rows (state.why_empty).
    empty: dict[str, str] = {}


class Counters(PhaseCounts, frozen=True, kw_only=True):
    """Requests of the profiling phase so far (the report's PhaseCounts), with the warmup's, the unmatched
    halves and `in_flight` as the last window's accounting or a crash left it."""

    warmup: int = 0
    unmatched: int = 0
    in_flight: int = 0


class WindowRow(_S, frozen=True, kw_only=True):
    name: str
    index: int = 0
    state: Literal["open", "closed"] = "open"
    issued: int = 0
    ok: int = 0
    errors: int = 0
    client_p50_ms: float | None = None
    client_p99_ms: float | None = None
    model_call_p50_ms: float | None = None
    balanced: bool | None = None


class ModelRow(_S, frozen=True, kw_only=True):
    name: str
    stage: str = ""
    state: str = "running"
    reason: str = ""


class CampaignModelRow(_S, frozen=True, kw_only=True):
    """A campaign's model: where its current attempt runs, how far its qualify got (from the model's journal),
    its state (queued, submitted, running, retrying, then its final status) and its verdicts so far."""

    name: str
    node: str = ""
    attempt: int = 0
    stage: str = ""
    state: str = "queued"
    reason: str = ""
    issued: int = 0
    ok: int = 0
    errors: int = 0
    restarts: int = 0
    verdicts: dict[str, int] = {}  # outcome -> how many (pass, fail, inconclusive)


class SloState(_S, frozen=True, kw_only=True):
    """One SLO at a sweep point: its outcome, and why when it did not pass."""

    slo: str
    outcome: str
    reason: str = ""


class PointRow(_S, frozen=True, kw_only=True):
    """A sweep's load point as of its latest judgement (a rerun replaces it): the load offered and achieved,
    its tail latencies and each SLO's state. `name` is the offered load with its unit, the row's key."""

    name: str
    offered: float
    unit: str = ""
    outcome: str = ""
    runs: int = 0
    requests: int = 0
    ok: int = 0
    achieved_rps: float | None = None
    client_p99_ms: float | None = None
    model_call_p99_ms: float | None = None
    slos: list[SloState] = []
    balanced: bool = True
    stopped_early: bool = False
    saturation: list[str] = []


class VerdictRow(_S, frozen=True, kw_only=True):
    """A verdict as the page lists it: the latest per name (soak metric, gate, non-inferiority). No field is
    named like a credential (`key`, `token`): publish's scrubber would hide its value."""

    name: str
    outcome: str
    final: bool = False
    reason: str = ""
    interval: list[float] | None = None
    estimate: float | None = None
    limit: float | None = None
    unit: str = ""
    detects: str = ""


class ServerInfo(_S, frozen=True, kw_only=True):
    state: str = ""
    incarnation: int = 0
    restarts: int = 0
    causes: list[str] = []
    exits: list[str] = []


class GpuRow(_S, frozen=True, kw_only=True):
    """One GPU as last sampled (`name`: "index name"): utilisation is the mean of NVML's samples since the
    previous sample; `notice` says when the server's own memory is unavailable (a PID namespace)."""

    name: str
    uuid: str = ""
    utilization_percent: float | None = None
    power_w: float | None = None
    temperature_c: int | None = None
    sm_clock_mhz: int | None = None
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    server_memory_bytes: int | None = None
    throttle_reasons: list[str] = []
    notice: str = ""


class LatencyPoint(schema.LatencyPoint, frozen=True, kw_only=True, array_like=True):
    """The report's latency point, array-like on the wire (the page's most frequent payload):
    [t_s, client_ms, handler_ms, model_call_ms]."""


class MemoryPoint(schema.MemoryPoint, frozen=True, kw_only=True, array_like=True):
    """The report's memory point with whose it is, array-like on the wire: [t_s, rss_bytes, gpu_memory_bytes,
    role]; role is `server`, `aqbench` or `aiperf`."""

    role: str = ""


class InFlightPoint(_S, frozen=True, kw_only=True, array_like=True):
    """The server's gauge of requests in flight at a time, array-like on the wire: [t_s, in_flight]."""

    t_s: float
    in_flight: int


class ModelSeries(_S, frozen=True, kw_only=True):
    """One campaign model's chart series: `points` as [seconds since the campaign started, value], thinned to
    a few hundred (a page shows many models)."""

    name: str
    points: list[tuple[float, float]] = []


class PageState(_S, frozen=True, kw_only=True):
    """Everything the page shows, as of event `seq`."""

    seq: int = 0
    run: RunInfo = RunInfo()
    counters: Counters = Counters()
    windows: list[WindowRow] = []
    models: list[ModelRow] = []
    points: list[PointRow] = []
    campaign: list[CampaignModelRow] = []
    verdicts: list[VerdictRow] = []
    server: ServerInfo = ServerInfo()
    latency: list[LatencyPoint] = []
    memory: list[MemoryPoint] = []
    in_flight: list[InFlightPoint] = []
    # A campaign's charts: each model's client latency and server RSS over the campaign's time.
    model_latency: list[ModelSeries] = []
    model_memory: list[ModelSeries] = []
    dropped: dict[str, int] = {}
    gpus: list[GpuRow] = []
    # What the failed requests were answered, by HTTP status and kind of body, one example each.
    error_kinds: list[ErrorKind] = []


class Change(_S, frozen=True, kw_only=True, array_like=True):
    """[seq, op, section, value]: `set` a section (run, counters, server, dropped), `put` a row by name (windows,
    models, points, campaign, verdicts) or `add` a point (latency, memory). The page skips changes at or before its state's seq."""

    seq: int
    op: Literal["set", "put", "add"]
    section: str
    value: msgspec.Struct | list[ErrorKind] | dict[str, int] | int  # a section, row or point; error kinds; drops
