"""aqbench's side of the handover file protocol with one AIPerf process (the HandoverControl port).
AIPerf's side is the timing plugin (timing.py, run inside AIPerf); the file names both use are in handover_files.py.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import msgspec

# Imports neither AIPerf nor the core beyond ports.
from adapters.aiperf.handover_files import (
    GATE,
    GO,
    HALT,
    HALTED,
    HANDOVER_DIR_ENV,
    LIMIT,
    POLL_S,
    PROTOCOL_FILES,
    READY,
    read_int,
    write_atomic,
)
from orchestrator.spine.ports import HaltFact

__all__ = ["FileHandover", "read_halted"]


def read_halted(path: Path) -> HaltFact | None:
    """The `halted` file's fact, None while it is absent."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=HaltFact)
    except FileNotFoundError:
        return None


class FileHandover:
    """aqbench's side of the protocol for one AIPerf process (the HandoverControl port).

    The protocol. A soak hands its load over from an old AIPerf process to a fresh one with no gap, and without SIGINT
    (which drops the requests still open). Every file lives in one folder, named by `AQBENCH_HANDOVER_DIR` in the
    AIPerf process's environment, and is written whole (a temporary file renamed over it), so a reader never sees a
    torn one:

    - `ready` (the process): unix ns, written before its first profiling credit (gated or not).
    - `gate` (aqbench, before launch): after `ready`, the timing manager issues nothing until `go` exists. Without
      `gate`, no waiting. `go` may hold a unix ns (rate mode): when the first request is due, the predecessor's next
      slot, so the schedule runs on across the handover; empty, the first is due one interval after `go`.
    - `halt` (aqbench): no new credit is issued; the open requests finish and are recorded, then the profiling phase
      ends and AIPerf writes its files and exits as a complete run. The plugin writes `halted`: {"unix_ns": when it
      stopped issuing, "sent": profiling credits issued, "next_unix_ns": in rate mode, when its next request was due}.
    - `limit` (aqbench, concurrency mode only): the most requests the process may have open (default and ceiling: its
      --concurrency); re-read when it changes. Rate mode ignores it.

    The plugin looks at the folder every `POLL_S` (5 ms). The gate's wait counts toward AIPerf's --benchmark-duration
    (its phase clock starts before the first credit).
    """

    def __init__(self, folder: Path, *, gated: bool) -> None:
        """Create `folder`, remove protocol files left from an earlier use, and write `gate` if `gated`.
        Blocks (a few small file operations)."""
        self._folder = Path(folder).resolve()
        self._folder.mkdir(parents=True, exist_ok=True)
        for name in PROTOCOL_FILES:
            with contextlib.suppress(FileNotFoundError):
                (self._folder / name).unlink()
        self.gated = gated
        if gated:
            write_atomic(self._folder / GATE, "")

    @property
    def folder(self) -> Path:
        return self._folder

    def env(self) -> dict[str, str]:
        return {HANDOVER_DIR_ENV: str(self._folder)}

    async def wait_ready(self) -> int:
        """Poll `ready` every POLL_S until it holds an integer; no deadline of its own (the caller's)."""
        while True:
            found = read_int(self._folder / READY)
            if found is not None:
                return found
            await anyio.sleep(POLL_S)

    def go(self, start_unix_ns: int | None = None) -> None:
        write_atomic(self._folder / GO, "" if start_unix_ns is None else str(start_unix_ns))

    def halt(self) -> None:
        write_atomic(self._folder / HALT, "")

    def set_limit(self, in_flight: int) -> None:
        if in_flight < 0:
            raise ValueError(f"set_limit: in_flight must be >= 0, got {in_flight}")
        write_atomic(self._folder / LIMIT, str(in_flight))

    def halted(self) -> HaltFact | None:
        return read_halted(self._folder / HALTED)
