"""Server processes on real subprocesses: output pumping, group stop with grace, orphan sweep, ports."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest

from adapters.server.group import reap_members
from adapters.server.lines import parse_log_line
from adapters.server.netport import check_port_free, pick_free_port
from adapters.server.process import SubprocessLauncher
from adapters.server.subreaper import become_subreaper
from orchestrator.base.errors import ServerError
from orchestrator.events import LogLine

pytestmark = pytest.mark.anyio


class Sink:
    def __init__(self) -> None:
        self.events: list[LogLine] = []

    async def publish(self, event):
        self.events.append(event)
        return event


def _open(tmp_path: Path, code: str, sink: Sink):
    return SubprocessLauncher().open([sys.executable, "-c", code], env={"EXTRA": "x"}, cwd="",
                                     log_path=tmp_path / "server.log", sink=sink, incarnation=3,
                                     parse_line=parse_log_line)


class TestOutput:
    async def test_lines_from_both_pipes_reach_events_log_and_tail(self, tmp_path):
        """stdout JSON, stderr text and a last line without newline all become LogLine events."""
        code = ("import sys, os; print('{\"event\": \"hello\", \"level\": \"info\"}'); "
                "print('ERROR: it broke', file=sys.stderr); sys.stdout.write(os.environ['EXTRA'] + '-tail')")
        sink = Sink()
        async with _open(tmp_path, code, sink) as proc:
            assert await proc.wait() == 0
            await proc.wait_output_closed(2)
        by_text = {e.text: e for e in sink.events}
        assert by_text["hello"].fields == {"event": "hello", "level": "info"} and by_text["hello"].stream == "stdout"
        assert by_text["ERROR: it broke"].level == "error" and by_text["ERROR: it broke"].stream == "stderr"
        assert by_text["x-tail"].incarnation == 3
        assert sorted(proc.output_tail()) == sorted(['{"event": "hello", "level": "info"}', "ERROR: it broke",
                                                     "x-tail"])
        assert "x-tail\n" in (tmp_path / "server.log").read_text()

    async def test_cannot_exec_names_the_program(self, tmp_path):
        """A missing executable is a ServerError naming server.argv[0]."""
        with pytest.raises(ServerError, match=r"cannot start the server '/nonexistent/srv' \(server.argv\[0\]\): "
                                              r"No such file or directory"):
            async with SubprocessLauncher().open(["/nonexistent/srv"], env={}, cwd="", log_path=tmp_path / "l",
                                                 sink=Sink(), incarnation=1, parse_line=parse_log_line):
                pass


class TestStop:
    async def test_stop_signal_reaches_the_group_and_counts_as_clean(self, tmp_path):
        """The stop signal goes to the whole group: a child in the group dies with the leader."""
        code = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; "
                "time.sleep(60)']); print(c.pid, flush=True); time.sleep(60)")
        sink = Sink()
        async with _open(tmp_path, code, sink) as proc:
            with anyio.fail_after(10):
                while not sink.events:
                    await anyio.sleep(0.02)
            child = int(sink.events[0].text)
            result = await proc.stop(signal.SIGTERM, 5.0)
        assert result.returncode == -signal.SIGTERM and not result.forced
        assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE

    async def test_group_member_ignoring_the_signal_is_killed_after_grace(self, tmp_path):
        """When the leader exits but a group member ignores SIGINT, the group is SIGKILLed after grace."""
        child_code = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('armed', flush=True); time.sleep(60)"
        code = (f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', {child_code!r}]); "
                "print(c.pid, flush=True); time.sleep(60)")
        sink = Sink()
        async with _open(tmp_path, code, sink) as proc:
            with anyio.fail_after(10):
                while len(sink.events) < 2:
                    await anyio.sleep(0.02)
            child = int(next(e.text for e in sink.events if e.text.isdigit()))
            result = await proc.stop(signal.SIGINT, 0.5)
        assert result.forced and result.returncode is not None and 0.5 <= result.waited_s < 5
        assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE

    async def test_sweep_kills_own_session_grandchild_seen_or_marked(self, tmp_path):
        """A grandchild in its own session survives the group kill and is then swept as an orphan."""
        code = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; "
                "time.sleep(60)'], start_new_session=True, stdout=subprocess.DEVNULL); "
                "print(c.pid, flush=True); time.sleep(60)")
        sink = Sink()
        async with _open(tmp_path, code, sink) as proc:
            with anyio.fail_after(10):
                while not sink.events:
                    await anyio.sleep(0.02)
            grandchild = int(sink.events[0].text)
            await proc.stop(signal.SIGINT, 2.0)
            assert psutil.pid_exists(grandchild)  # the group kill cannot reach another session
            orphans = await proc.sweep_orphans()
        assert [o.pid for o in orphans] == [grandchild]
        assert psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE if psutil.pid_exists(grandchild) else True


class TestPorts:
    def test_free_port_passes_and_bound_port_names_holder(self):
        """A picked port is free; a listening socket is refused naming this pid."""
        port = pick_free_port("127.0.0.1")
        check_port_free("127.0.0.1", port)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            with pytest.raises(ServerError, match=rf"port {port} on 127.0.0.1 is already in use by pid {os.getpid()}"):
                check_port_free("127.0.0.1", port)


SUPERVISOR = """
import sys, anyio
from pathlib import Path
from adapters.server.group import reap_members
from adapters.server.lines import parse_log_line
from adapters.server.process import SubprocessLauncher
from adapters.server.subreaper import become_subreaper

class Sink:
    async def publish(self, event): pass
    def publish_nowait(self, event): pass

async def main():
    server = [sys.executable, "-c", "import time; time.sleep(600)"]  # silent: no broken pipe ends it
    async with SubprocessLauncher().open(server, env={}, cwd="", log_path=Path(sys.argv[1]), sink=Sink(),
                                         incarnation=1, parse_line=parse_log_line) as proc:
        print(proc.pid, flush=True)
        await anyio.sleep(600)

anyio.run(main)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
class TestParentDeath:
    def test_a_killed_supervisor_takes_its_server_along(self, tmp_path: Path) -> None:
        """SIGKILL the process supervising a server (as a lost Ray node kills its worker): the server, running
        the real argv under the same pid, gets SIGTERM from the kernel and exits instead of being orphaned."""
        import subprocess

        pid = 0
        sup = subprocess.Popen([sys.executable, "-c", SUPERVISOR, str(tmp_path / "server.log")],
                               stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
        try:
            assert sup.stdout is not None
            pid = int(sup.stdout.readline())
            server = psutil.Process(pid)
            deadline = time.monotonic() + 10
            while "time.sleep(600)" not in " ".join(server.cmdline()):  # the launcher has exec'd the server
                assert time.monotonic() < deadline, server.cmdline()
                time.sleep(0.01)
            sup.kill()
            sup.wait(timeout=10)
            server.wait(timeout=10)  # raises TimeoutExpired if the server outlived its supervisor
            assert not psutil.pid_exists(pid) or server.status() == psutil.STATUS_ZOMBIE
        finally:
            if sup.poll() is None:
                sup.kill()
            with contextlib.suppress(psutil.NoSuchProcess, ValueError):
                psutil.Process(pid).kill()  # only when the test failed: never leave the server behind


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux only")
async def test_members_left_to_us_by_a_leader_that_ended_are_reaped(tmp_path: Path) -> None:
    """A leader (as AIPerf's main process) ends before a member of its session and group: the member is left to
    us, the subreaper, and reaped once it ends; no zombie of it stays under us."""
    assert become_subreaper()
    code = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.5)']); "
            "print(p.pid, flush=True)")
    leader = await anyio.open_process([sys.executable, "-c", code], start_new_session=True)
    async with leader:
        assert leader.stdout is not None
        member = int((await leader.stdout.receive()).split()[0])
        await leader.wait()
    with anyio.fail_after(5):
        while psutil.Process(member).ppid() != os.getpid():
            await anyio.sleep(0.01)
    assert await reap_members(leader.pid, timeout_s=5) == [member]
    assert not psutil.pid_exists(member)
