"""Gated phases of one phased AIPerf process, aqbench's side (the PhaseGates port).
AIPerf's side is the timing plugin (timing.py, `AQBENCH_PHASE_GATES`); the file names are in handover_files.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path

import anyio

from adapters.aiperf.handover_files import (
    GATE,
    GO,
    HALT,
    HALTED,
    PHASE_GATES_ENV,
    READY,
    SKIP,
    phase_file,
    write_atomic,
)

__all__ = ["FileGates"]


class FileGates:
    """The gates of one AIPerf process's gated loads (by profiling phase name; each with its warmup phase).

    A sweep writes a point's possible rerun into the batch that decides it: the rerun's phases (`warmup_<name>`,
    `<name>`) are gated, and once the verdict is in, aqbench writes `go.<phase>` (run it) or `skip.<phase>` (AIPerf
    ends the phase at once with nothing sent); `halt.<name>` ends a running load's profiling phase early, its open
    requests recorded. A real AIPerf 0.13.0 run with skipped phases, the last one included, exited 0 with every other
    phase's records and a manifest saying 0 for the skipped ones (bench/RESULTS.md).
    """

    def __init__(self, folder: Path, names: Sequence[str]) -> None:
        """Create `folder`, clear it of an earlier use, and write each name's gates (its phase and its warmup's).
        Blocks (a few small file writes)."""
        self._folder = Path(folder).resolve()
        self._folder.mkdir(parents=True, exist_ok=True)
        for stale in self._folder.iterdir():
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        self.names = list(names)
        self._decided: dict[str, anyio.Event] = {name: anyio.Event() for name in self.names}
        self._run: dict[str, bool] = {}
        for name in self.names:
            for phase in (f"warmup_{name}", name):
                write_atomic(self._folder / phase_file(GATE, phase), "")

    def env(self) -> dict[str, str]:
        return {PHASE_GATES_ENV: str(self._folder)}

    def reached(self, name: str) -> bool:
        """Whether AIPerf has reached the load's gate (its warmup's or its own)."""
        return any((self._folder / phase_file(READY, p)).exists() for p in (f"warmup_{name}", name))

    def decide(self, name: str, *, run: bool) -> None:
        """Run the load (`go` for both its phases) or skip it (`skip`); the first decision stands."""
        if name in self._run:
            return
        self._run[name] = run
        for phase in (f"warmup_{name}", name):
            write_atomic(self._folder / phase_file(GO if run else SKIP, phase), "")
        self._decided[name].set()

    def close(self) -> None:
        """Every load still undecided is skipped (the process ended, or aqbench gave up deciding)."""
        for name in self.names:
            self.decide(name, run=False)

    async def decided(self, name: str) -> bool:
        """Wait for the load's decision: whether it runs."""
        await self._decided[name].wait()
        return self._run[name]

    def ran(self, name: str) -> bool | None:
        """The decision taken, None while undecided."""
        return self._run.get(name)

    def halt(self, name: str) -> None:
        """End the load's profiling phase early, gated or not: AIPerf stops issuing its requests, records those
        open, and goes on to the next phase. A phase past its last request ignores it."""
        write_atomic(self._folder / phase_file(HALT, name), "")

    def halted(self, name: str) -> int | None:
        """How many requests the phase sent before AIPerf ended it on a halt (`halted.<name>`); None: not halted
        (not yet, or it had sent them all)."""
        try:
            return int(json.loads((self._folder / phase_file(HALTED, name)).read_text())["sent"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None
