"""Server processes: spawn in a new session, pump output to LogLine events and server.log, stop the group
(signal, grace, SIGKILL), reap, and sweep descendants that escaped the group. Knows nothing of HTTP, health
or restart policy (the supervisor decides; this module only acts)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import BinaryIO

import anyio
import psutil
from anyio.abc import ByteReceiveStream, Process

from adapters.server.group import group_alive, stop_group
from adapters.server.lines import LineSplitter
from adapters.server.netport import check_port_free, pick_free_port
from adapters.server.subreaper import adopted, become_subreaper, reap_status
from orchestrator.base.errors import ServerError
from orchestrator.events import LogLine
from orchestrator.spine.ports import EventSink, Orphan, ParsedLine, StopResult

__all__ = ["SubprocessLauncher", "ManagedProcess", "MARKER_ENV", "TAIL_LINES", "PARENT_DEATH_SIGNAL"]

# Inherited by every descendant unless it clears its environment: finds orphans never seen by the sampler.
MARKER_ENV = "AQBENCH_SERVER_TOKEN"
# What a server gets when the process supervising it dies without stopping it: its graceful stop signal.
PARENT_DEATH_SIGNAL = signal.SIGTERM
_PDEATHSIG = Path(__file__).with_name("pdeathsig.py")


def _with_parent_death_signal(argv: Sequence[str]) -> list[str]:
    """argv behind the launcher that arms the parent-death signal and execs it (same pid, same argv)."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", str(_PDEATHSIG), str(int(PARENT_DEATH_SIGNAL)), str(os.getpid()), *argv]


def _check_executable(program: str, path: str | None, cwd: str) -> None:
    """Raise OSError as exec would, before the launcher hides it behind its own exit."""
    if os.sep in program:
        target = Path(cwd or ".") / program
        if not target.is_file():
            raise FileNotFoundError(2, "No such file or directory", program)
        if not os.access(target, os.X_OK):
            raise PermissionError(13, "Permission denied", program)
    elif shutil.which(program, path=path) is None:
        raise FileNotFoundError(2, "No such file or directory", program)
TAIL_LINES = 40
_CHUNK = 64 * 1024
_REAP_TIMEOUT_S = 10.0
_DYING_S = 0.3


class ManagedProcess:
    """One spawned server (session leader, pgid == pid) and what it printed. Made by SubprocessLauncher."""

    def __init__(
        self,
        proc: Process,
        *,
        token: str,
        sink: EventSink,
        incarnation: int,
        parse_line: Callable[[str], ParsedLine],
        log_fh: BinaryIO,
    ) -> None:
        self.pid = proc.pid
        self._proc = proc
        self._token = token
        self._sink = sink
        self._incarnation = incarnation
        self._parse = parse_line
        self._log = log_fh
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._seen: dict[int, float] = {}
        try:
            self._born = psutil.Process(proc.pid).create_time()
        except psutil.Error:  # already gone: anything re-parented to us since spawn is a candidate
            self._born = time.time() - 1.0
        self._open_pipes = 2
        self._closed = anyio.Event()
        self.lines = 0

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        return await self._proc.wait()

    def output_tail(self) -> list[str]:
        return list(self._tail)

    async def wait_output_closed(self, timeout_s: float) -> None:
        with anyio.move_on_after(timeout_s):
            await self._closed.wait()

    def remember(self, pids: Sequence[tuple[int, float]]) -> None:
        for pid, created in pids:
            if pid != self.pid:
                self._seen[pid] = created

    # -- output ------------------------------------------------------------------------------------

    async def _pump(self, stream: ByteReceiveStream | None, name: str) -> None:
        """Read one pipe to end-of-file; every line goes to server.log, the tail and a LogLine event."""
        splitter = LineSplitter()
        try:
            if stream is None:
                return
            while True:
                try:
                    chunk = await stream.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                await self._emit(splitter.feed(chunk), name)
            await self._emit(splitter.flush(), name)
        finally:
            self._open_pipes -= 1
            if self._open_pipes == 0:
                self._closed.set()

    async def _emit(self, lines: list[str], name: str) -> None:
        if not lines:
            return
        self._log.write("".join(line + "\n" for line in lines).encode())
        self._log.flush()
        for line in lines:
            self.lines += 1
            self._tail.append(line)
            parsed = self._parse(line)
            await self._sink.publish(LogLine(
                source="server", stream=name, text=parsed.text, fields=parsed.fields,
                level=parsed.level, incarnation=self._incarnation,
            ))

    # -- stopping ----------------------------------------------------------------------------------

    def _group_alive(self) -> bool:
        """Any live (non-zombie) member left in the server's process group."""
        return group_alive(self.pid, leader_exited=self.returncode is not None)

    def _descendants(self) -> list[tuple[int, float]]:
        try:
            kids = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []
        out = []
        for kid in kids:
            try:
                out.append((kid.pid, kid.create_time()))
            except psutil.Error:
                continue
        return out

    async def stop(self, sig: int, grace_s: float) -> StopResult:
        """Send `sig` to the group, wait up to `grace_s` for the leader and the group, then SIGKILL the
        group, reap the leader and wait for every member to be gone. Blocks at most grace_s + 10 s.
        Safe to call again or after the process exited."""
        if self.returncode is None:
            self.remember(self._descendants())
        forced, waited_s = await stop_group(self, sig, grace_s)
        return StopResult(returncode=self.returncode, forced=forced, waited_s=waited_s)

    # Descendants that escaped are found three ways: re-parented to us (we are a child subreaper on Linux),
    # seen in a resource sample, or carrying this incarnation's environment marker.
    async def sweep_orphans(self) -> list[Orphan]:
        """Kill every still-running descendant seen earlier or carrying this incarnation's marker (after a moment
        to end on its own), and reap those that died already (`dead`): zombies left to us in any session."""
        return await anyio.to_thread.run_sync(self._sweep)

    def _sweep(self) -> list[Orphan]:
        living: dict[int, tuple[psutil.Process, str, list[str]]] = {}
        for proc, how in self._candidates().values():
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:  # zombies are reaped below, with every dead one
                    living[proc.pid] = (proc, how, proc.cmdline())
            except psutil.Error:
                continue
        orphans: list[Orphan] = []
        # A worker told by the parent-death signal is dying as we look: a moment to die on its own first.
        # psutil reaps those that are our children (waitpid) and gives their return codes.
        gone, _ = psutil.wait_procs([p for p, _, _ in living.values()], timeout=_DYING_S) if living else ([], [])
        for proc in gone:
            _, how, cmdline = living.pop(proc.pid)
            code = getattr(proc, "returncode", None)
            orphans.append(Orphan(pid=proc.pid, cmdline=cmdline, found_by=how, dead=True,
                                  name=cmdline[0].rsplit("/", 1)[-1] if cmdline else "",
                                  returncode=code if isinstance(code, int) else None))
        for proc, how, cmdline in living.values():
            try:
                proc.kill()
            except psutil.Error:
                continue
            orphans.append(Orphan(pid=proc.pid, cmdline=cmdline, found_by=how))
        # psutil waits on a child of ours with waitpid: the orphans re-parented to us are reaped here.
        psutil.wait_procs([p for p, _, _ in living.values()], timeout=3)
        return orphans + self._reap_dead()

    def _candidates(self) -> dict[int, tuple[psutil.Process, str]]:
        # First net: children re-parented to us (subreaper) since this incarnation was born; then what a
        # sample saw; then the marker. Each orphan is reported under the first net that caught it.
        me = os.getpid()
        found: dict[int, tuple[psutil.Process, str]] = {}
        for proc in adopted(born_after=self._born - 0.01, token_env=MARKER_ENV, token=self._token,
                            exclude={self.pid}):
            found[proc.pid] = (proc, "subreaper")
        for pid, created in list(self._seen.items()):
            if pid in found:
                continue
            try:
                proc = psutil.Process(pid)
                if abs(proc.create_time() - created) < 0.01:
                    found[pid] = (proc, "sample")
            except psutil.Error:
                continue
        for proc in psutil.process_iter():
            if proc.pid in found or proc.pid in (me, self.pid):
                continue
            try:
                if proc.environ().get(MARKER_ENV) == self._token:
                    found[proc.pid] = (proc, "marker")
            except psutil.Error:
                continue
        return found

    def _reap_dead(self) -> list[Orphan]:
        """Reap zombies among our children that were this server's descendants (seen in a sample, or in its
        group or session): a worker that died with its parent is left to us, the subreaper, and nobody else
        will collect it. Returns those that had left the server's group (members of the group died with the
        stop we made). Never the leader (anyio waits for it), nor a child of ours from elsewhere (its own
        waiter would lose its status): that is why descent is required."""
        try:
            children = psutil.Process(os.getpid()).children()
        except psutil.Error:
            return []
        out = []
        for child in children:
            if child.pid == self.pid:
                continue
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    continue
                how = self._descended(child)
                name = child.name() if how else ""
            except (psutil.Error, OSError):
                continue
            if how:
                code = reap_status(child.pid)
                if how != "group":
                    out.append(Orphan(pid=child.pid, cmdline=[], found_by=how, dead=True, name=name,
                                      returncode=code))
        return out

    def _descended(self, child: psutil.Process) -> str:
        """How a zombie child is known to be this server's: "group" (still in it), "sample" (seen in a sample,
        in another group), "session"; "" if it is not known to be."""
        if os.getpgid(child.pid) == self.pid:
            return "group"
        created = self._seen.get(child.pid)
        if created is not None and abs(child.create_time() - created) < 0.01:
            return "sample"
        return "session" if os.getsid(child.pid) == self.pid else ""


class SubprocessLauncher:
    """ProcessLauncher for real subprocesses (anyio.open_process, new session, piped output)."""

    def check_port_free(self, host: str, port: int) -> None:
        check_port_free(host, port)

    def pick_free_port(self, host: str) -> int:
        return pick_free_port(host)

    @asynccontextmanager
    async def open(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        log_path: Path,
        sink: EventSink,
        incarnation: int,
        parse_line: Callable[[str], ParsedLine],
    ) -> AsyncIterator[ManagedProcess]:
        """Spawn `argv`; on leaving, SIGKILL what is left of the group, drain the pipes and reap."""
        become_subreaper()  # before the spawn, so the server inherits our owner mark
        token = secrets.token_hex(8)
        full_env = {**os.environ, **env, MARKER_ENV: token}
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log_fh:
            try:
                _check_executable(argv[0], full_env.get("PATH"), cwd)
                proc = await anyio.open_process(
                    _with_parent_death_signal(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    cwd=cwd or None, env=full_env, start_new_session=True,
                )
            except OSError as exc:
                raise ServerError(
                    f"cannot start the server {argv[0]!r} (server.argv[0]): {exc.strerror or exc}"
                    + (f" in {cwd}" if cwd else "") + "; check the path and that it is executable"
                ) from exc
            managed = ManagedProcess(
                proc, token=token, sink=sink, incarnation=incarnation, parse_line=parse_line, log_fh=log_fh
            )
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(managed._pump, proc.stdout, "stdout")
                    tg.start_soon(managed._pump, proc.stderr, "stderr")
                    try:
                        yield managed
                    finally:
                        with anyio.CancelScope(shield=True):
                            await managed.stop(signal.SIGKILL, 0.0)
                            # A grandchild still holding a pipe would keep it open: don't wait forever.
                            await managed.wait_output_closed(2.0)
                            tg.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_REAP_TIMEOUT_S):
                    await proc.aclose()
