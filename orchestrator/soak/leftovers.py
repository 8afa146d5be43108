"""After a soak: which processes of the run are still alive (none may be)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from orchestrator.events import ProcessCheck

__all__ = ["check_processes"]


def check_processes(run_dir: Path, *, orphans_killed: int, orphans_reaped: Sequence[str] = (),
                    wait_s: float = 5.0) -> ProcessCheck:
    """Children of this process that are zombies now or still alive after `wait_s`, and any process anywhere
    whose command line names the run folder (a server or AIPerf that escaped its group). A zombie child is
    counted before it is reaped (waiting on it collects it). Blocks."""
    me = psutil.Process(os.getpid())
    deadline = time.monotonic() + wait_s
    leftover: list[str] = []
    zombies: list[str] = []
    for child in me.children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:  # left unreaped until now: that is the failure
                zombies.append(f"pid {child.pid}: {child.name()} <defunct>")
        except psutil.Error:
            pass
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except psutil.TimeoutExpired:
            pass
        except psutil.NoSuchProcess:
            continue
        try:
            desc = f"pid {child.pid}: {' '.join(child.cmdline())[:160]}"
            if child.status() == psutil.STATUS_ZOMBIE:
                if not any(z.startswith(f"pid {child.pid}:") for z in zombies):
                    zombies.append(desc)
            elif child.is_running():
                leftover.append(desc)
        except psutil.NoSuchProcess:
            continue
    marker = str(run_dir.resolve())
    own = {me.pid} | {int(x.split()[1].rstrip(":")) for x in leftover + zombies}
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if marker in cmd and proc.info["pid"] not in own:
            desc = f"pid {proc.info['pid']}: {cmd[:160]}"
            (zombies if proc.info["status"] == psutil.STATUS_ZOMBIE else leftover).append(desc)
    return ProcessCheck(orphans_killed=orphans_killed, leftover=leftover, zombies=zombies,
                        orphans_reaped=list(orphans_reaped))
