"""Child subreaper (Linux): orphaned descendants of our servers are re-parented to this process, not to init,
so the orphan sweep finds them among our own children even when they carry no marker.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

__all__ = ["OWNER_ENV", "PR_SET_CHILD_SUBREAPER", "become_subreaper", "is_subreaper", "adopted",
           "reap_adopted", "reap_status",
           "spawned_here"]

# `become_subreaper` is idempotent; elsewhere than Linux it is a no-op. Children we spawn ourselves inherit
# `OWNER_ENV`; a re-parented descendant that dropped its environment lacks it, which is how it is told apart from a
# subprocess of ours that asyncio is waiting on. The mark alone is not enough: a process that renames itself with
# setproctitle (AIPerf 0.13.0 does, as "aiperf system_controller") blanks what /proc/PID/environ shows, so the
# subprocesses we spawn for other jobs than serving (AIPerf, native workers) are also named with `spawned_here`, and
# they and their sessions are never taken for orphans.
OWNER_ENV = "AQBENCH_OWNER_PID"
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
_state: dict[str, int] = {"pid": 0, "on": 0}  # which process asked, and what the kernel said
# Pids of subprocesses we spawned that are not servers; each leads its own session (start_new_session).
_ours: set[int] = set()


@contextmanager
def spawned_here(pid: int) -> Iterator[None]:
    """While inside, `pid` (a subprocess we spawned, leading its own session) and every process of its
    session are ours: the orphan sweep never kills them. Leave it only once the process is reaped."""
    _ours.add(pid)
    try:
        yield
    finally:
        _ours.discard(pid)


def _is_ours(proc: psutil.Process) -> bool:
    if proc.pid in _ours:
        return True
    try:
        return os.getsid(proc.pid) in _ours
    except OSError:
        return False


def _prctl(option: int, arg: int | ctypes.c_int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if isinstance(arg, ctypes.c_int):
        return int(libc.prctl(option, ctypes.byref(arg), 0, 0, 0))
    return int(libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0))


def become_subreaper() -> bool:
    """Make this process a child subreaper (once) and mark the environment our children inherit.
    True when it is one; False off Linux or when the kernel refused (then the marker sweep remains)."""
    if _state["pid"] == os.getpid():  # a forked copy of us is a different process: ask again
        return bool(_state["on"])
    on = False
    if sys.platform.startswith("linux"):
        try:
            on = _prctl(PR_SET_CHILD_SUBREAPER, 1) == 0
        except (OSError, AttributeError):  # no libc prctl symbol: not a Linux we can drive
            on = False
    os.environ[OWNER_ENV] = str(os.getpid())
    _state.update(pid=os.getpid(), on=int(on))
    return on


def is_subreaper() -> bool:
    """What the kernel says (PR_GET_CHILD_SUBREAPER); False off Linux."""
    if not sys.platform.startswith("linux"):
        return False
    flag = ctypes.c_int(0)
    try:
        return _prctl(PR_GET_CHILD_SUBREAPER, flag) == 0 and flag.value != 0
    except (OSError, AttributeError):
        return False


def adopted(*, born_after: float, token_env: str, token: str, exclude: set[int]) -> list[psutil.Process]:
    """Live children of this process, created at or after `born_after`, that we did not spawn: they lack
    our `OWNER_ENV` mark or carry the server's `token`. `exclude` holds pids we know we spawned."""
    me = os.getpid()
    mine = str(me)
    try:
        children = psutil.Process(me).children()
    except psutil.Error:
        return []
    out = []
    for proc in children:
        if proc.pid in exclude or _is_ours(proc):
            continue
        try:
            if proc.create_time() < born_after or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            try:
                env = proc.environ()
            except psutil.AccessDenied:  # changed its credentials: not a subprocess of ours
                env = {}
        except psutil.Error:
            continue
        if env.get(token_env) == token or env.get(OWNER_ENV) != mine:
            out.append(proc)
    return out


def reap_adopted(leader: int, *, session: bool = True) -> tuple[list[int], int]:
    """Reap the zombie children of ours in the process group (and, with `session`, the session) that `leader`
    leads, other than the leader: we spawned only the leader there (start_new_session), so every other member
    that is our child was adopted as subreaper, and nobody else will collect it. Returns (the pids reaped, how
    many such members are still running). Never blocks."""
    try:
        children = psutil.Process(os.getpid()).children()
    except psutil.Error:
        return [], 0
    reaped, running = [], 0
    for child in children:
        if child.pid == leader:
            continue
        try:
            if os.getpgid(child.pid) != leader and not (session and os.getsid(child.pid) == leader):
                continue
            if child.status() != psutil.STATUS_ZOMBIE:
                running += 1
                continue
        except (psutil.Error, OSError):
            continue
        if reap_status(child.pid) is not None:
            reaped.append(child.pid)
    return reaped, running


def reap_status(pid: int) -> int | None:
    """Reap `pid` if it is our child and has ended (never blocks): its return code, negative for a signal as
    subprocess reports it; None when there was nothing to collect."""
    try:
        got = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG)
    except ChildProcessError:
        return None
    if got is None:
        return None
    return got.si_status if got.si_code == os.CLD_EXITED else -got.si_status
