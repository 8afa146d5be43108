"""A running soak's checkpoint report, written by a child process (`aqbench report --checkpoint`). Must not
fold the journal itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio

import orchestrator

__all__ = ["CheckpointReportFailed", "write_checkpoint_report"]

# A report of an 8-hour journal folds in well under a minute on 2 cores; past this the child is killed.
DEADLINE_S = 300.0
_STDERR_TAIL_BYTES = 2000
# The folder holding the `orchestrator` package that runs this soak: the child runs the same code.
_CODE_ROOT = str(Path(orchestrator.__file__).resolve().parent.parent)


class CheckpointReportFailed(Exception):
    """The child wrote no report: it exited non-zero, or outlived its deadline and was killed."""


def report_argv(run_dir: Path) -> list[str]:
    """The child's command line: this interpreter, `-m orchestrator report RUN_DIR --checkpoint`."""
    return [sys.executable, "-m", "orchestrator", "report", str(run_dir), "--checkpoint"]


# The soak judges its own memory (`orchestrator_rss`): folding a journal that grows all run long inside the
# soak's process left glibc's heap larger after every checkpoint, so the fold runs in a child that reads the
# journal and exits.
async def write_checkpoint_report(run_dir: Path, *, deadline_s: float = DEADLINE_S) -> None:
    """Write soak.json, soak.md and soak.html of the soak journaling into `run_dir`, from a child process.

    Blocks until the child exits. Raises CheckpointReportFailed with its exit code and the tail of its
    stderr when it failed, or when it ran past `deadline_s` (it is killed and reaped first). On
    cancellation the child is killed and reaped before the cancellation goes on: nothing is left running.
    """
    path = os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PYTHONPATH": _CODE_ROOT + (os.pathsep + path if path else "")}
    argv = report_argv(run_dir)
    with anyio.move_on_after(deadline_s) as scope:
        # run_process kills and reaps the child when its scope is cancelled (deadline or the caller's).
        done = await anyio.run_process(argv, check=False, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       start_new_session=True)
    if scope.cancelled_caught:
        raise CheckpointReportFailed(f"`{' '.join(argv)}` ran past its {deadline_s:g} s deadline and was killed")
    if done.returncode != 0:
        tail = done.stderr[-_STDERR_TAIL_BYTES:].decode(errors="replace").strip()
        raise CheckpointReportFailed(f"`{' '.join(argv)}` exited {done.returncode}: {tail or '(no stderr)'}")
