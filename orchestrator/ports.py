"""Interfaces the core owns and adapters implement: server kinds, server processes, resource samplers.

Only Protocols and the small value types they exchange live here; no behaviour. Adapters may import this
module (and events, config, errors) and nothing else from the core.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec

from orchestrator.events import Event

__all__ = [
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
    "ServerParts",
]

E = TypeVar("E", bound=Event)


class Readiness(msgspec.Struct, frozen=True):
    """One readiness answer as the kind understood it; `detail` says what was seen, for messages."""

    ready: bool
    degraded: bool = False
    detail: str = ""


class ParsedLine(msgspec.Struct, frozen=True):
    """One printed line: `fields` when it was a JSON object, `level` when one could be read."""

    text: str
    fields: dict[str, Any] | None = None
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

    def listed_models(self, body: bytes) -> list[dict[str, Any]]:
        """The model entries of a `GET /v1/models` answer; ValueError when the shape is wrong."""
        ...

    def parse_log_line(self, text: str) -> ParsedLine:
        """Split one printed line into fields and level."""
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
    """A descendant that outlived the server's process group and was killed."""

    pid: int
    cmdline: list[str]
    # How it was found: "subreaper" (re-parented to us), "sample" (seen in a resource sample) or "marker".
    found_by: str = ""


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
        """Kill descendants that left the group and are still alive; return them."""
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
    """Device-wide NVML figures of one GPU."""

    index: int
    name: str
    memory_used_bytes: int
    memory_total_bytes: int
    utilization_percent: float


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


@dataclass(frozen=True)
class ServerParts:
    """The adapters one supervisor uses, chosen by a composition root (or by `server.kind`)."""

    kind: ServerKind
    launcher: ProcessLauncher
    new_sampler: Callable[[], ResourceSampler]
