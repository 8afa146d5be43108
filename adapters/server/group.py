"""Process groups, owned here for every launcher (servers, AIPerf, native workers): signal a group, tell
whether any member lives, and stop one (signal, grace, SIGKILL, reap, wait for the whole group).
Each launched program leads its own session and group (start_new_session), so its pid is its group id."""

from __future__ import annotations

import os
import signal
import time
from typing import Protocol

import anyio
import psutil

from adapters.server.subreaper import reap_adopted

__all__ = ["GroupLeader", "signal_group", "group_alive", "stop_group", "reap_members"]

_POLL_S = 0.05
_REAP_TIMEOUT_S = 10.0


class GroupLeader(Protocol):
    """What stopping needs of a process: its pid (= its group id), its return code, and a wait."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    async def wait(self) -> int: ...


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to every member of group `pgid`; a group already gone is not an error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int, *, leader_exited: bool) -> bool:
    """Any live (non-zombie) member left in group `pgid` (the leader too, unless it is known to have exited)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                if proc.pid == pgid and leader_exited:
                    continue
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False


async def stop_group(leader: GroupLeader, sig: int, grace_s: float, *, whole_group: bool = True) -> tuple[bool, float]:
    """Send `sig` to the leader's group, wait up to `grace_s` for the leader (and, with `whole_group`, every
    member), then SIGKILL the group and reap. Returns (forced, waited_s). Blocks at most grace_s + 10 s;
    safe to call again or after the process exited. Cancellation leaves the group signalled, not reaped."""
    started = time.monotonic()

    def alive() -> bool:
        return whole_group and group_alive(leader.pid, leader_exited=leader.returncode is not None)

    if leader.returncode is None:
        signal_group(leader.pid, sig)
        with anyio.move_on_after(grace_s):
            await leader.wait()
            while alive():  # noqa: ASYNC110 - the members are other processes: there is no event to wait on
                await anyio.sleep(_POLL_S)
    forced = leader.returncode is None or alive()
    if forced:
        signal_group(leader.pid, signal.SIGKILL)
        # SIGKILL lands asynchronously: members that are not our children (re-parented) may still show as
        # running for a moment, so "stopped" means the whole group is gone, not only the leader.
        with anyio.move_on_after(_REAP_TIMEOUT_S):
            await leader.wait()
            while alive():  # noqa: ASYNC110 - as above
                await anyio.sleep(_POLL_S)
    # Members that died with the group and were left to us (the subreaper). Not the session: a server's
    # process that left its group is the orphan sweep's to report (adapters/server/process.py).
    reap_adopted(leader.pid, session=False)
    return forced, time.monotonic() - started


async def reap_members(leader: int, *, timeout_s: float = 2.0) -> list[int]:
    """Reap the members of `leader`'s group or session that were left to us (the subreaper) as they end, waiting
    at most `timeout_s` for those still running (a SIGKILL just sent lands asynchronously). Returns the pids
    reaped. Cancellation, or the time running out, leaves the rest for the next sweep or the final check."""
    reaped: list[int] = []
    with anyio.move_on_after(timeout_s):
        while True:
            got, running = reap_adopted(leader)
            reaped += got
            if not running:
                break
            await anyio.sleep(_POLL_S)
    return reaped
