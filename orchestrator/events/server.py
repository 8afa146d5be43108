"""Events of the supervised server's life: spawn, state, readiness, health, exit, restart, samples, log lines."""

from __future__ import annotations

from typing import Literal

from orchestrator.events.base import Event
from orchestrator.events.gpu import GpuProcessMemory
from orchestrator.events.payloads import (
    Json,
)

__all__ = ["ServerSpawned", "ServerStateChanged", "ServerReady", "ServerHealthChanged", "ServerExited", "ServerRestarting", "OrphanKilled", "OrphanReaped", "ResourceSampled", "ServerLoadSampled", "GpuSampled", "LogLine", "ServerState", "RestartCause", "RESTART_CAUSES"]


# ------------------------------------------------------------------------------- server lifecycle


ServerState = Literal[
    "starting", "ready", "degraded", "unhealthy", "restarting", "stopping", "stopped", "failed"
]

# Why the supervisor ended an incarnation it did not mean to end (and restarted it, or gave up): the process
# exited; readiness probes were answered "not ready" (a front end whose worker died answers 503 and never exits);
# probes went unanswered (a hang); start-up never became ready; /v1/models lacked the model. "" where no cause
# was journaled (journals written before the field): read as an unplanned end all the same.
RestartCause = Literal["", "exited", "unready", "unresponsive", "startup_timeout", "bad_models"]
RESTART_CAUSES: dict[str, str] = {
    "exited": "the server process exited",
    "unready": "readiness probes were answered 'not ready'",
    "unresponsive": "readiness probes went unanswered (a hang)",
    "startup_timeout": "it did not become ready in time",
    "bad_models": "/v1/models did not list the model",
    "": "no cause was journaled",
}


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
    # On a stop we asked for: the exception line ("KeyboardInterrupt") of the traceback that our stop signal
    # raised in the server (uvicorn re-raises SIGINT), so the folds label it expected; "" when there is none
    # (and in journals written before this field).
    stop_traceback: str = ""
    # On a stop the supervisor decided for the server's own failure (not asked for by the run): why (a
    # RestartCause, e.g. "unready" for failed readiness probes); "" for a stop the run asked for, an exit of
    # the server's own, and in journals written before this field. `expected` speaks of the exit, this of the stop.
    stopped_for: RestartCause = ""


class ServerRestarting(Event, frozen=True, kw_only=True):
    """The restart policy chose to start a new incarnation after `backoff_s` (decided now; the new
    incarnation's ServerSpawned says when it started, and its absence that the run ended first)."""

    incarnation: int
    attempt: int
    backoff_s: float
    reason: str = ""
    # What ended the previous incarnation; "" in journals written before this field.
    cause: RestartCause = ""


class OrphanKilled(Event, frozen=True, kw_only=True):
    """A descendant that escaped the server's process group was found after stop and killed."""

    incarnation: int
    pid: int
    cmdline: list[str] = []
    signal: str = "SIGKILL"
    # "subreaper" (re-parented to aqbench), "sample" (seen in a resource sample), "marker" (environment
    # token); "" in journals written before this field.
    found_by: str = ""


class OrphanReaped(Event, frozen=True, kw_only=True):
    """A descendant that escaped the server's process group had died already (with its parent, by the
    parent-death signal, or on its own) and was left to aqbench, the subreaper, as a zombie: it was reaped.
    Zombies keep no command line: `name` is the kernel's short name of the program."""

    incarnation: int
    pid: int
    name: str = ""
    # Its exit: the return code, negative for a signal (as subprocess reports), None when unknown.
    returncode: int | None = None
    # How it was found: "sample" (seen in a resource sample), "group" or "session" (the server's).
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
    # Whose GPU memory `gpu_memory_bytes` is: "tree" (the server's processes, by NVML's pids), "device" (every
    # process on the GPUs the tree holds open: in a PID namespace NVML's pids are not the tree's), "" in older
    # journals (then the tree's).
    gpu_memory_scope: str = ""


class ServerLoadSampled(Event, frozen=True, kw_only=True):
    """How many requests the server says it is handling now, by its own gauge (the reference server's
    `/metrics` `aqbench_reference_active_requests`), read beside a resource sample once the incarnation is ready.
    Published only when the number changed since the last reading (a gauge of a server kind that has one)."""

    incarnation: int
    in_flight: int


class GpuSampled(Event, frozen=True, kw_only=True):
    """Device-wide GPU figures (NVML), sampled beside the process tree when a GPU is present.

    `utilization_percent` is NVML's one reading at the sample; `utilization_mean_percent` the mean of the
    utilisation samples NVML took since the previous sample (about one per 1/6 s), over
    `utilization_samples` of them: the figure to read. None where the device keeps no samples."""

    index: int
    name: str = ""
    memory_used_bytes: int = 0
    memory_total_bytes: int = 0
    utilization_percent: float = 0.0
    utilization_mean_percent: float | None = None
    utilization_samples: int = 0
    power_w: float | None = None
    temperature_c: int | None = None
    sm_clock_mhz: int | None = None
    # Why the clocks are held down now (NVML's clock event reasons: sw_power_cap, hw_thermal, ...; gpu_idle).
    throttle_reasons: list[str] = []
    # Every compute process on this GPU, the tree's marked; the tree's memory on this GPU.
    processes: list[GpuProcessMemory] = []
    tree_memory_bytes: int | None = None


class LogLine(Event, frozen=True, kw_only=True):
    """One line printed by a child process or read from a log file; `fields` when it was JSON."""

    stream: str
    text: str = ""
    fields: Json | None = None
    level: str = ""
    incarnation: int = 0
