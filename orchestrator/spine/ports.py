"""Interfaces the core owns and adapters implement (server kinds and processes, samplers, AIPerf, chat, logs):
Protocols and the small value types they exchange, no behaviour. Imports only config and events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

import anyio
import msgspec
from anyio.abc import TaskStatus

from orchestrator.base.columns import Floats, Ints
from orchestrator.config import WorkloadConfig
from orchestrator.events import ClientRecord, Event, GpuIdentity, GpuProcessMemory, Json, LogLine

__all__ = [
    "OwnerFiles",
    "Readiness",
    "ParsedLine",
    "ServerKind",
    "EventSink",
    "StopResult",
    "Orphan",
    "ServerProcess",
    "ProcessLauncher",
    "GpuFigures",
    "TreeSample",
    "ResourceSampler",
    "HttpProbe",
    "ServerParts",
    "EventStream",
    "EventBus",
    "RecordsTailer",
    "ChatAnswer",
    "ChatSession",
    "ChatClients",
    "NativeAnswer",
    "NativeSession",
    "NativeWorkers",
    "AiperfFacts",
    "AiperfInvocation",
    "ExportLevel",
    "AiperfResult",
    "PhaseLoad",
    "WindowIssued",
    "AiperfTools",
    "HaltFact",
    "HandoverControl",
    "Toolkit",
    "LineDecoder",
    "ServerColumns",
    "ClientColumns",
    "LineFollowing",
    "LogCodecs",
]

E = TypeVar("E", bound=Event)


# Adapters may import this module (and events, config, base.errors) and nothing else from the core.
class Readiness(msgspec.Struct, frozen=True):
    """One readiness answer as the kind understood it; `detail` says what was seen, for messages."""

    ready: bool
    degraded: bool = False
    detail: str = ""


class ParsedLine(msgspec.Struct, frozen=True):
    """One printed line: `fields` when it was a JSON object, `level` when one could be read."""

    text: str
    fields: Json | None = None  # the line's own JSON object, as printed (foreign)
    level: str = ""


class ServerKind(Protocol):
    """What differs between server kinds (trtmc-server, reference): argv, readiness and log parsing."""

    name: str

    def render_argv(self, template: Sequence[str], values: Mapping[str, str]) -> list[str]:
        """Fill `{placeholder}`s; raise ConfigError naming the placeholder when a value is missing."""
        ...

    def parse_readiness(self, status: int, body: bytes) -> Readiness:
        """Judge one `GET /health/ready` answer."""
        ...

    def listed_models(self, body: bytes) -> list[Json]:
        """The model entries of a `GET /v1/models` answer; ValueError when the shape is wrong."""
        ...

    def parse_log_line(self, text: str) -> ParsedLine:
        """Split one printed line into fields and level."""
        ...

    # The route of the server's own gauge of requests in flight ("" when the kind has none known).
    in_flight_path: str

    def parse_in_flight(self, body: bytes) -> int | None:
        """Requests in flight from a `GET in_flight_path` answer; None when the answer does not say."""
        ...


class EventSink(Protocol):
    """Where adapters publish events (the run's Bus satisfies this)."""

    async def publish(self, event: E) -> E: ...


class StopResult(msgspec.Struct, frozen=True):
    """How a stop ended: the return code (negative = killed by that signal) and whether SIGKILL was needed."""

    returncode: int | None
    forced: bool = False
    waited_s: float = 0.0


class Orphan(msgspec.Struct, frozen=True):
    """A descendant that outlived the server's process group: killed, or (`dead`) found a zombie and reaped."""

    pid: int
    cmdline: list[str]
    # How it was found: "subreaper" (re-parented to us), "sample" (seen in a resource sample) or "marker";
    # a dead one also "group" or "session" (still in the server's).
    found_by: str = ""
    # Had died already (a zombie left to us, the subreaper): reaped, not killed; `name` is all a zombie keeps.
    dead: bool = False
    name: str = ""
    returncode: int | None = None


class ServerProcess(Protocol):
    """One running server incarnation in its own session, with its output pumped to events."""

    pid: int

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int:
        """Block until the process exits; returns its return code (negative = signal)."""
        ...

    def output_tail(self) -> list[str]:
        """The last lines it printed (stdout and stderr, in arrival order)."""
        ...

    async def wait_output_closed(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until both output pipes reached end-of-file."""
        ...

    def remember(self, pids: Sequence[tuple[int, float]]) -> None:
        """Record descendants seen (pid, create time) so that the orphan sweep can find them later."""
        ...

    async def stop(self, sig: int, grace_s: float) -> StopResult:
        """Signal the group, wait `grace_s`, then SIGKILL the group; reap. Safe after the process exited."""
        ...

    async def sweep_orphans(self) -> list[Orphan]:
        """Kill descendants that left the group and are still alive, reap those already dead (zombies left
        to us); return both."""
        ...


class ProcessLauncher(Protocol):
    """Starts server processes and owns the port checks made before each start."""

    def open(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        log_path: Path,
        sink: EventSink,
        incarnation: int,
        parse_line: Callable[[str], ParsedLine],
    ) -> AbstractAsyncContextManager[ServerProcess]:
        """Spawn in a new session; leaving the context kills whatever is left and closes the pipes.

        Raises ServerError when the executable cannot be started.
        """
        ...

    def check_port_free(self, host: str, port: int) -> None:
        """Raise ServerError naming the port (and the holder's pid where knowable) when it is bound."""
        ...

    def pick_free_port(self, host: str) -> int:
        """A loopback port that was free a moment ago."""
        ...


class GpuFigures(msgspec.Struct, frozen=True):
    """Device-wide NVML figures of one GPU (GpuSampled's fields, which say what each means)."""

    index: int
    name: str
    memory_used_bytes: int
    memory_total_bytes: int
    utilization_percent: float
    utilization_mean_percent: float | None = None
    utilization_samples: int = 0
    power_w: float | None = None
    temperature_c: int | None = None
    sm_clock_mhz: int | None = None
    throttle_reasons: list[str] = []
    processes: list[GpuProcessMemory] = []
    tree_memory_bytes: int | None = None


class TreeSample(msgspec.Struct, frozen=True):
    """One sample over a process tree; `pids` are (pid, create time) of every member seen."""

    pid: int
    rss_bytes: int
    uss_bytes: int | None
    cpu_percent: float
    threads: int
    open_files: int
    children: int
    gpu_memory_bytes: int | None
    pids: list[tuple[int, float]]
    gpus: list[GpuFigures]
    # What `gpu_memory_bytes` covers ("tree", or "device" where NVML's pids are not the tree's: `gpu_notice`
    # says why), and each GPU's identity (the same every sample).
    gpu_memory_scope: str = "tree"
    gpu_notice: str = ""
    gpu_identities: list[GpuIdentity] = []


class ResourceSampler(Protocol):
    """Samples a process tree. `sample` blocks (reads /proc, calls NVML): run it in a worker thread."""

    @property
    def gpu_unavailable(self) -> str:
        """Why GPU figures are missing ('' while NVML works or before the first sample)."""
        ...

    def sample(self, root_pid: int) -> TreeSample | None:
        """Sample the tree under `root_pid`; None when that process is gone."""
        ...

    def close(self) -> None: ...


class HttpProbe(Protocol):
    """The supervisor's plain HTTP GETs (readiness, model listing): one per supervisor, closed at its end."""

    async def get(self, url: str, timeout_s: float) -> tuple[int, bytes] | str:
        """(status, body), or a sentence naming the URL and why no answer came (timeout, refused, ...)."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class ServerParts:
    """The adapters one supervisor uses, chosen by a composition root (or by `server.kind`)."""

    kind: ServerKind
    launcher: ProcessLauncher
    new_sampler: Callable[[], ResourceSampler]
    new_probe: Callable[[], HttpProbe]


class EventStream(Protocol):
    """One subscriber's stream of the run's events (an async context manager; iterate it for events)."""

    async def __aenter__(self) -> EventStream: ...
    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None: ...
    def __aiter__(self) -> AsyncIterator[Event]: ...


class EventBus(EventSink, Protocol):
    """What an adapter that both reads and writes the run's events needs of the bus."""

    def subscribe(self, name: str, *, size: int = 4096, lossy: bool = False,
                  kinds: tuple[type[Event], ...] | None = None) -> EventStream: ...


class RecordsTailer(Protocol):
    """Follows the server's `--records` files and publishes ServerRecord events until cancelled."""

    async def run(self, *, task_status: TaskStatus[None] = ...) -> None: ...


class ChatAnswer(Protocol):
    """One HTTP chat exchange as the core reads it (status 0: no HTTP response arrived)."""

    @property
    def request_id(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def text(self) -> str | None: ...
    @property
    def body(self) -> str: ...
    @property
    def echoed_request_id(self) -> str: ...
    @property
    def server_timing_ms(self) -> float | None: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def error(self) -> str: ...
    @property
    def start_unix_ns(self) -> int: ...
    @property
    def end_unix_ns(self) -> int: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def completion_tokens(self) -> int | None: ...


class ChatSession(Protocol):
    """An open HTTP chat client for one model (an async context manager)."""

    async def __aenter__(self) -> ChatSession: ...
    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None: ...
    async def ask(self, text: str, audio_path: str | None, *, request_id: str) -> ChatAnswer: ...


class NativeAnswer(Protocol):
    """One answer of the native worker (the unserved side of the identity check)."""

    @property
    def ok(self) -> bool: ...
    @property
    def text(self) -> str | None: ...
    @property
    def error(self) -> str: ...
    @property
    def completion_tokens(self) -> int | None: ...
    @property
    def request_id(self) -> str: ...


class NativeSession(Protocol):
    """A running native worker (an async context manager)."""

    async def __aenter__(self) -> NativeSession: ...
    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None: ...
    async def generate(self, prompt: str, audio_path: str | None, *,
                       config: Mapping[str, object] | None = None, request_id: str = "") -> NativeAnswer: ...


class AiperfFacts(Protocol):
    """The installed AIPerf: version, fingerprint and console script."""

    @property
    def version(self) -> str: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def executable(self) -> str: ...


class AiperfInvocation(Protocol):
    """One rendered `aiperf profile` command: argv, the environment it adds, and both as one shell line."""

    @property
    def argv(self) -> list[str]: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def shell(self) -> str: ...
    @property
    def artifact_dir(self) -> str: ...
    @property
    def input_file(self) -> str: ...
    @property
    def keep_inputs(self) -> bool:
        """Whether AIPerf's inputs.json stays once the run has ended (else it is removed)."""
        ...
    def save(self, folder: Path) -> tuple[Path, Path]: ...
    def extended(self, extra: Sequence[str]) -> AiperfInvocation:
        """The same command with `extra` arguments appended (argv and shell line)."""
        ...


class PhaseLoad(msgspec.Struct, frozen=True, kw_only=True):
    """One load of a phased AIPerf run (several windows in one process): its profiling phase `name`, preceded
    by `warmup_<name>` when `warmup` > 0; a `rate` (open loop) or a `concurrency` (closed loop)."""

    name: str
    requests: int
    warmup: int = 0
    rate: float | None = None
    concurrency: int | None = None


class AiperfResult(Protocol):
    """How one AIPerf run ended, judged by its files."""

    @property
    def classification(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def issued(self) -> dict[str, int]:
        """Per phase: the requests AIPerf says it issued (a phase it said nothing of is absent)."""
    @property
    def issued_from(self) -> dict[str, str]:
        """Per phase: where `issued` comes from: "aiperf_log" (requests sent) or "phase_manifest" (records kept)."""
    @property
    def artifact_dir(self) -> str:
        """Where the run's files are."""
    @property
    def windows(self) -> dict[str, WindowIssued]:
        """A phased run's windows (else empty): per window, what AIPerf issued and how it ended."""


class WindowIssued(msgspec.Struct, frozen=True, kw_only=True):
    """One window of a phased AIPerf run: per phase kind, the requests AIPerf issued and where that count
    comes from (as AiperfResult.issued / issued_from), and its classification."""

    issued: dict[str, int] = {}
    issued_from: dict[str, str] = {}
    classification: str = ""


# What AIPerf keeps per request on disk: "raw" every request and response body (~180 KB per audio request, the
# evidence of a bounded run); "records" the per-request records only (a few KB), for runs of unbounded length.
ExportLevel = Literal["raw", "records"]


class HaltFact(msgspec.Struct, frozen=True):
    """What a halted AIPerf process said when it stopped issuing: when (unix ns), how many profiling credits
    it had issued by then, and in rate mode when its schedule's next request was due (unix ns; None in
    concurrency mode, or when it halted before its schedule began): the slot its successor takes."""

    unix_ns: int
    sent: int
    next_unix_ns: int | None = None


class HandoverControl(Protocol):
    """Load control of one AIPerf process through files in `folder`, for a handover between two processes
    with no gap: a gated process says `ready` and waits for `go`; `halt` stops its issuing, its open requests
    finish and are recorded, and it ends as a complete run; `set_limit` caps its open requests (concurrency
    mode only). Implemented by adapters/aiperf/handover.py; AIPerf's side is aqbench's timing plugin."""

    @property
    def folder(self) -> Path: ...
    def env(self) -> dict[str, str]:
        """The variables the AIPerf process needs (added to its command)."""
        ...
    async def wait_ready(self) -> int:
        """Block until the process is ready to send its first profiling request; its unix ns then."""
        ...
    def go(self, start_unix_ns: int | None = None) -> None:
        """Let a gated process start issuing. In rate mode, `start_unix_ns` is when its first request is due
        (its schedule goes on from there); without it the first is due one interval after `go`."""
        ...
    def halt(self) -> None:
        """Stop the process issuing; what is open finishes, and the run ends complete."""
        ...
    def set_limit(self, in_flight: int) -> None:
        """The most requests the process may have open (never above its --concurrency)."""
        ...
    def halted(self) -> HaltFact | None:
        """What the process wrote when it stopped issuing; None until then."""
        ...


class PhaseGates(Protocol):
    """Gated loads of one phased AIPerf process (a sweep's rerun that only a verdict can call for): each load's
    phases wait before their first request until aqbench decides to run them or to skip them (they end at once,
    nothing sent); any load's profiling phase may be halted while it runs. Implemented by adapters/aiperf/gates.py;
    AIPerf's side is aqbench's timing plugin."""

    names: list[str]

    def env(self) -> dict[str, str]:
        """The variables the AIPerf process needs (added to its command)."""
    def reached(self, name: str) -> bool:
        """Whether the process waits at the load's gate (or went past it)."""
    def decide(self, name: str, *, run: bool) -> None:
        """Run the load or skip it; the first decision stands."""
    def close(self) -> None:
        """Skip every load still undecided."""
    async def decided(self, name: str) -> bool:
        """Block until the load is decided; whether it runs."""
    def ran(self, name: str) -> bool | None:
        """The decision, None while undecided."""
    def halt(self, name: str) -> None:
        """End the load's profiling phase early (gated or not): no more requests, the open ones recorded."""
    def halted(self, name: str) -> int | None:
        """The requests the load's profiling phase sent before a halt ended it; None: not halted (yet)."""


class AiperfTools(Protocol):
    """AIPerf as the core drives it: install check, tokenizer, command, run (the process's one owner)."""

    def check_install(self) -> AiperfFacts: ...
    def ensure_tokenizer(self, configured: str = "") -> Path: ...
    def build_command(self, workload: WorkloadConfig, *, base_url: str, model: str, input_file: Path,
                      artifact_dir: Path, tokenizer: Path, executable: str = "", requests: int | None = None,
                      warmup: int | None = None, concurrency: int | None = None, request_rate: float | None = None,
                      tap_dir: Path | None = None, tmp_dir: Path | None = None,
                      worker_gc: bool = False, timing_wait: bool = False,
                      control: HandoverControl | None = None,
                      export_level: ExportLevel = "raw") -> AiperfInvocation:
        """The `aiperf profile` command for one run; the overrides (requests, ...) win over `workload`.
        `worker_gc` (soaks) turns the cycle collector back on in AIPerf's worker, bounding its memory;
        `timing_wait` (soaks, sweeps) makes its timing manager wait for a free slot instead of spinning in
        concurrency mode whatever `workload.timing` says (which decides otherwise, `wait` by default);
        `control` adds a handover control's variables; `export_level` "records" keeps AIPerf's disk use to a
        few KB per request (soaks)."""
        ...
    def handover_control(self, folder: Path, *, gated: bool) -> HandoverControl:
        """A handover control through files in `folder` (created; stale protocol files removed). `gated`: the
        process will wait for `go` before its first profiling request. Blocks (a few small file writes)."""
        ...
    def phase_gates(self, folder: Path, names: Sequence[str]) -> PhaseGates:
        """Gates in `folder` (created, cleared) for the loads `names` of a phased command. Blocks (small writes)."""
        ...
    def phased_command(self, cmd: AiperfInvocation, loads: Sequence[PhaseLoad], folder: Path,
                       gates: PhaseGates | None = None) -> AiperfInvocation:
        """`cmd` rewritten to run `loads` as phases of one AIPerf process (writes its phases file into `folder`);
        with `gates`, their loads wait at their gates."""
        ...
    async def run_aiperf(self, cmd: AiperfInvocation, bus: EventBus, *, window: str, deadline_s: float,
                         stop_grace_s: float, install: AiperfFacts | None = None,
                         on_exit: Callable[[], None] | None = None,
                         stop: anyio.Event | None = None,
                         phases: Mapping[str, str] | None = None,
                         gates: PhaseGates | None = None) -> AiperfResult:
        """`phases` (a phased command): each load's name -> its window; records, issued counts and the
        AiperfStarted/AiperfExited events go to each phase's window (`window` is the first). A gated load's
        window starts only once its gate says run: a skipped load is no window (no events, no accounting)."""
        ...


class ChatClients(Protocol):
    """Opens an HTTP chat client for one model of a server."""

    def __call__(self, base_url: str, model: str, *, timeout_s: float = 60.0,
                 max_tokens: int | None = None) -> ChatSession: ...


class NativeWorkers(Protocol):
    """Starts a native worker from its argv (its stderr to `log_path`)."""

    def __call__(self, argv: list[str], *, log_path: Path, startup_timeout_s: float = 120.0,
                 request_timeout_s: float = 120.0) -> NativeSession: ...


@dataclass(frozen=True)
class Toolkit:
    """Every adapter the uses need, chosen by a composition root (orchestrator/commands/wiring.py) and
    passed in, so that the core never imports adapters."""

    server_parts: Callable[[str], ServerParts]
    records_tailer: Callable[[EventBus], RecordsTailer]
    chat_client: ChatClients
    native_worker: NativeWorkers
    aiperf: AiperfTools


class OwnerFiles(msgspec.Struct, frozen=True, kw_only=True):
    """TRTMC's qualification files for one profile as read (adapters/trtmc/qual_files.py): tasks.yaml and
    config/models/<profile>.yaml parsed (foreign data), their paths in the checkout and its revision."""

    tasks: dict[str, Any]  # the owners' YAML, open: judge/owners.py checks each key it reads
    tasks_file: str
    profile: dict[str, Any] | None = None  # as tasks
    profile_file: str = ""
    revision: str = ""


class ServerColumns(NamedTuple):
    """A block of server-records lines as columns, row i = line i, valued as decode_line's ServerRecord:
    what ingest's join and summary read, without one event per line. `times` holds handler_ms, model_call_ms
    and worker_roundtrip_ms (3 rows, NaN where absent); an absent end_unix_ns is base.columns.INT_ABSENT."""

    request_id: list[str]
    status: Ints
    error_code: list[str]
    times: Floats
    end_unix_ns: Ints


class ClientColumns(NamedTuple):
    """A block of client-record lines as columns, row i = line i, valued as decode_line's ClientRecord (absent
    values as in ServerColumns); `odd` holds the whole record of each row whose outcome is not plainly ok (an
    error, a status of 400 or more, a cancellation), which the join classifies one by one."""

    request_id: list[str]
    phase: list[str]
    request_start_ns: Ints
    request_end_ns: Ints
    request_latency_ms: Floats
    odd: dict[int, ClientRecord]


class LineDecoder(Protocol):
    """One foreign line format: its name, kind ("records": a bad line is an error; "logs": non-JSON lines
    are text), its line decoder and, for the big record formats, a block decoder: whole lines (each ending
    in a newline) to columns, raising where any line would not decode (or giving fewer rows than lines)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def decode_line(self) -> Callable[[bytes], Any]: ...  # each format's own record type
    @property
    def decode_block(self) -> Callable[[bytes | memoryview], ServerColumns | ClientColumns] | None: ...


class LineFollowing(Protocol):
    """A file read as it grows (and rotates): whole lines, truncations and a torn last line counted."""

    truncations: int
    torn: int

    def read_available(self, *, final: bool = False) -> list[bytes]: ...
    def close(self) -> None: ...


class LogCodecs(Protocol):
    """The foreign log and record formats `aqbench ingest` reads, as the ingest core uses them."""

    @property
    def formats(self) -> Mapping[str, LineDecoder]: ...
    def file_format(self, name: str, first_line: bytes | None) -> str: ...
    def sniff(self, line: bytes) -> str | None: ...
    def is_known_name(self, name: str) -> bool: ...
    def incarnation_from_name(self, name: str) -> int: ...
    def is_log(self, item: object) -> bool: ...
    def severity(self, item: Any) -> str: ...  # noqa: ANN401  # each codec's own record type
    def to_log_line(self, item: Any, *, stream: str, source: str) -> Event: ...  # noqa: ANN401  # as severity
    def severity_of_line(self, line: LogLine) -> str: ...
    def follow(self, path: str, *, poll_s: float) -> LineFollowing: ...
