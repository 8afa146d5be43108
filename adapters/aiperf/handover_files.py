"""The handover protocol's file names and whole-file writes, shared by aqbench's side (handover.py) and the
timing plugin that runs inside AIPerf (timing.py). Imports only the standard library, so that AIPerf's
timing manager loads nothing of aqbench's core. The protocol itself: adapters/aiperf/handover.py."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["GATE", "GO", "HALT", "HALTED", "HANDOVER_DIR_ENV", "LIMIT", "PHASE_GATES_ENV", "POLL_S", "PROTOCOL_FILES",
           "READY", "SKIP", "TIMING_WAIT_ENV", "phase_file", "read_int", "write_atomic"]

HANDOVER_DIR_ENV = "AQBENCH_HANDOVER_DIR"
# Read by the timing plugin: wait on a freed slot instead of spinning (concurrency mode).
TIMING_WAIT_ENV = "AQBENCH_TIMING_WAIT"
GATE, READY, GO, HALT, HALTED, LIMIT = "gate", "ready", "go", "halt", "halted", "limit"
PROTOCOL_FILES = (GATE, READY, GO, HALT, HALTED, LIMIT)
POLL_S = 0.005
# A phased run's gated phases (a sweep's rerun that only a verdict can call for): in this folder, `gate.<phase>`
# (aqbench, before launch) holds the phase before its first credit until `go.<phase>` (run it as configured) or
# `skip.<phase>` (end it at once, nothing sent); the plugin writes `ready.<phase>` when it reaches the gate.
PHASE_GATES_ENV = "AQBENCH_PHASE_GATES"
SKIP = "skip"


def phase_file(kind: str, phase: str) -> str:
    """A gated phase's file name: `<kind>.<phase name>` (AIPerf phase names are letters, digits, _ and -)."""
    return f"{kind}.{phase}"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` whole: a temporary file beside it, renamed over it. Blocks (one small write)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_int(path: Path) -> int | None:
    """The integer in `path`, None while it is absent (or not an integer). Blocks (one small read)."""
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
