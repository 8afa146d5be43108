"""Orphans that carry no marker: aqbench is a child subreaper, so a descendant that double-forks into its
own session with an empty environment while the server stops is re-parented to us, found and killed."""

from __future__ import annotations

import os
import signal
import sys

import anyio
import psutil
import pytest
from supervisor_support import drain, kinds, make_spec, new_bus

from adapters.server.subreaper import is_subreaper
from orchestrator.supervision.supervisor import supervised

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not hasattr(os, "fork") or os.uname().sysname != "Linux",
                                 reason="PR_SET_CHILD_SUBREAPER is Linux only")]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_daemon_born_at_stop_without_marker_is_found_by_subreaper(tmp_path):
    """0 processes left after stop, and the journal says the orphan was found as a re-parented child."""
    bus, sub = new_bus()
    daemon = 0
    try:
        async with supervised(make_spec(tmp_path, "--daemon-at-stop", sample_period_s=3600.0), bus) as handle:
            assert is_subreaper()
        events = drain(sub)
        announced = [line.fields["daemon_pid"] for line in kinds(events, "LogLine")
                     if line.fields and "daemon_pid" in line.fields]
        assert len(announced) == 1
        daemon = announced[0]
        orphans = kinds(events, "OrphanKilled")
        assert [(o.pid, o.found_by) for o in orphans] == [(daemon, "subreaper")]
        assert "time.sleep(600)" in " ".join(orphans[0].cmdline)  # the sleeper announced itself after exec
        assert not _running(daemon)
        # Reaped too: no zombie of it is left under us.
        assert not psutil.pid_exists(daemon) or psutil.Process(daemon).ppid() != os.getpid()
        assert handle.statistics().orphans_killed == 1
    finally:
        if daemon and _running(daemon):  # the unfixed code leaves it running: don't leak it
            os.kill(daemon, signal.SIGKILL)


async def test_own_subprocess_is_never_taken_for_an_orphan(tmp_path):
    """A subprocess we spawn while the server runs (it carries our owner mark) survives the sweep and keeps
    its exit status for whoever waits on it: reaping re-parented children steals nothing."""
    bus, sub = new_bus()
    async with supervised(make_spec(tmp_path, "--grandchild"), bus):
        mine = await anyio.open_process([sys.executable, "-c", "import sys; sys.stdin.read()"])
    async with mine:
        found = {o.found_by for o in kinds(drain(sub), "OrphanKilled")}
        assert found == {"subreaper"}
        assert mine.returncode is None and _running(mine.pid)
        assert mine.stdin is not None
        await mine.stdin.aclose()
        assert await mine.wait() == 0


_RENAMED = ("import setproctitle, subprocess, sys; setproctitle.setproctitle('aiperf system_controller'); "
            "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            "print(kid.pid, flush=True); sys.stdin.read(); kid.kill()")


async def test_own_subprocess_that_renames_itself_survives_when_named_ours(tmp_path):
    """AIPerf renames itself with setproctitle, which blanks what /proc/PID/environ shows, owner mark
    included: the sweep took such a process for an orphan and killed it (a server crash killed AIPerf).
    Named with spawned_here, it and the children of its session survive; an unnamed one is still taken."""
    pytest.importorskip("setproctitle")
    from contextlib import ExitStack

    from adapters.server.subreaper import spawned_here

    bus, sub = new_bus()
    procs, kids = [], []
    try:
        with ExitStack() as marks:
            async with supervised(make_spec(tmp_path, "--grandchild"), bus):
                for _ in range(2):
                    proc = await anyio.open_process([sys.executable, "-c", _RENAMED], start_new_session=True)
                    procs.append(proc)
                    kids.append(int((await proc.stdout.receive()).split()[0]))
                ours, other = procs
                assert psutil.Process(ours.pid).environ() == {}  # the blanked environment that fooled the sweep
                marks.enter_context(spawned_here(ours.pid))
            # The server has stopped and its orphans were swept, our mark still on.
            killed = {o.pid for o in kinds(drain(sub), "OrphanKilled")}
            assert other.pid in killed and ours.pid not in killed and kids[0] not in killed
            assert _running(ours.pid) and _running(kids[0])
    finally:
        for proc in procs:
            async with proc:
                proc.kill()
        for kid in kids:
            if _running(kid):
                os.kill(kid, signal.SIGKILL)
