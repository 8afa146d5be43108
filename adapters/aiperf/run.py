"""Run one AIPerf command as a supervised subprocess and stream its records onto the bus.
Own session, deadline, SIGINT then SIGKILL; logs become LogLine events, records ClientRecord; judged by files.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import anyio
import msgspec
from anyio.abc import Process, TaskGroup

from adapters.aiperf.artifacts import Classification, judge_artifacts, wait_artifacts_final
from adapters.aiperf.command import SHORT_TMP_PREFIX
from adapters.aiperf.records import RecordParseError, parse_export_line, parse_tap_line
from adapters.aiperf.retention import trim_artifacts
from adapters.aiperf.sent import issued_counts, parse_phase_sent, parse_phase_started, parse_sent
from adapters.fswatch import FolderWatch
from adapters.server.group import reap_members, signal_group, stop_group
from adapters.server.subreaper import spawned_here
from adapters.tail import LineFollower
from orchestrator.base.errors import ClientError
from orchestrator.events import AiperfExited, AiperfStarted, ClientRecord, Json, LogLine, Warned
from orchestrator.spine.ports import AiperfFacts, AiperfInvocation, EventSink, PhaseGates, WindowIssued

__all__ = ["AiperfOutcome", "run_aiperf", "classify_artifacts"]

classify_artifacts = judge_artifacts
_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|SUCCESS)\b")
_FINAL_WAIT_S = 15.0
_QUIET_S = 2.0


class AiperfOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How one AIPerf run ended, judged by its files."""

    window: str
    classification: Classification
    reason: str
    returncode: int | None
    aggregate: Json  # AIPerf's own aggregate, journaled as written (artifacts.py)
    artifact_dir: str
    records: dict[str, int]
    duration_ns: int
    # Per phase: the requests AIPerf issued, and where that count comes from ("aiperf_log": its
    # sending-complete line; "phase_manifest": the records it kept); a phase neither names is absent.
    issued: dict[str, int] = {}
    issued_from: dict[str, str] = {}
    # A phased run (several windows in one process): each window that started, with its own issued counts.
    windows: dict[str, WindowIssued] = {}


class _Counts:
    def __init__(self, phases: dict[str, tuple[str, str]] | None = None) -> None:
        self.by_via = {"tap": 0, "export": 0}
        self.bad_lines = 0
        self.sent: dict[str, int] = {}  # per phase kind, from AIPerf's own log
        self.sent_named: dict[str, int] = {}  # a phased run's: per phase name
        self.phases = phases or {}  # a phased run's phase name -> (window, kind)
        self.windows = {name: window for name, (window, _) in self.phases.items()} or None
        self.started: list[str] = []  # a phased run's windows whose first phase AIPerf started
        # A gated load's window -> what waits for its gate (started once AIPerf reaches it): its window starts
        # only if the gate says run.
        self.gated: dict[str, Callable[[], object] | None] = {}


async def _publish_lines(bus: EventSink, lines: list[bytes], via: str, window: str, counts: _Counts) -> None:
    parse = parse_tap_line if via == "tap" else parse_export_line
    for line in lines:
        try:
            rec: ClientRecord = parse(line, window=window, windows=counts.windows)
        except RecordParseError as exc:
            counts.bad_lines += 1
            await bus.publish(Warned(source="aiperf", code="aiperf_bad_record_line", message=str(exc)))
            continue
        counts.by_via[via] += 1
        await bus.publish(rec)


async def _tail_export(path: Path, bus: EventSink, window: str, stop: anyio.Event, counts: _Counts) -> None:
    follower = LineFollower(path)
    try:
        async for batch in follower.follow(stop):
            await _publish_lines(bus, batch, "export", window, counts)
    finally:
        follower.close()


async def _tail_taps(folder: Path, bus: EventSink, window: str, stop: anyio.Event, counts: _Counts) -> None:
    # One file per record-processor process; new files can appear while AIPerf starts its services.
    # Woken by the folder's change notifications (each tap line is one write), not by a timer.
    followers: dict[Path, LineFollower] = {}
    watch = FolderWatch(folder, prefix="tap-", poll_s=0.005)
    try:
        while True:
            final = stop.is_set()
            for path in sorted(folder.glob("tap-*.jsonl")):  # noqa: ASYNC240 - a few files, listed when the watch says so
                if path not in followers:
                    followers[path] = LineFollower(path)
            for follower in followers.values():
                batch = follower.read_available(final=final)
                if batch:
                    await _publish_lines(bus, batch, "tap", window, counts)
            if final:
                return
            await watch.wait(stop=stop)
    finally:
        watch.close()
        for follower in followers.values():
            follower.close()


async def _pump_logs(proc: Process, bus: EventSink, tail: list[str], scope: anyio.CancelScope, counts: _Counts,
                     started: Callable[[str], AiperfStarted] | None = None) -> None:
    assert proc.stdout is not None
    with scope:
        await _pump(proc, bus, tail, counts, started)


async def _pump(proc: Process, bus: EventSink, tail: list[str], counts: _Counts,
                started: Callable[[str], AiperfStarted] | None = None) -> None:
    assert proc.stdout is not None
    buf = b""
    async for chunk in proc.stdout:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for raw in lines:
            text = _ANSI.sub(b"", raw).decode("utf-8", "replace").rstrip()
            if not text.strip():
                continue
            tail.append(text)
            del tail[:-40]
            if (sent := parse_sent(text)) is not None:
                counts.sent[sent[0]] = sent[1]
            if counts.phases and (named := parse_phase_sent(text)) is not None:
                counts.sent_named[named[0]] = named[2]
            if started is not None and (name := parse_phase_started(text)) in counts.phases:
                window = counts.phases[name][0]
                if window in counts.gated:  # at its gate (its first phase's): it starts if aqbench says run
                    if (wait := counts.gated[window]) is not None:
                        counts.gated[window] = None
                        wait()
                elif window not in counts.started:  # its first phase: the window starts now
                    counts.started.append(window)
                    await bus.publish(started(window))
            match = _LEVEL.search(text)
            await bus.publish(LogLine(source="aiperf", stream="aiperf", text=text,
                                      level=match.group(1).lower() if match else ""))


def _own_reason(tail: list[str]) -> str:
    """What AIPerf itself said went wrong: its last ERROR/CRITICAL lines (level and clock stripped),
    else nothing. Its shutdown chatter follows the error, so the last lines alone would miss it."""
    said: list[str] = []
    for text in tail:
        match = _LEVEL.search(text)
        if match and match.group(1) in ("ERROR", "CRITICAL"):
            message = text[match.end():].strip()
            if message and message not in said:
                said.append(message)
    return " | ".join(said[-3:])


async def _wait_exit_or_stop(proc: Process, stop: anyio.Event | None) -> None:
    """Until the process exits or `stop` is set, whichever comes first."""
    if stop is None:
        await proc.wait()
        return
    async with anyio.create_task_group() as tg:

        async def on_stop() -> None:
            await stop.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(on_stop)
        await proc.wait()
        tg.cancel_scope.cancel()


async def _stop(proc: Process, grace_s: float) -> None:
    """SIGINT the group (AIPerf then writes what it has), SIGKILL after `grace_s`, reap."""
    await stop_group(proc, signal.SIGINT, grace_s, whole_group=False)


async def run_aiperf(
    cmd: AiperfInvocation,
    bus: EventSink,
    *,
    window: str = "aiperf-1",
    deadline_s: float = 600.0,
    stop_grace_s: float = 10.0,
    cwd: Path | None = None,
    install: AiperfFacts | None = None,
    on_exit: Callable[[], None] | None = None,
    stop: anyio.Event | None = None,
    phases: Mapping[str, str] | None = None,
    gates: PhaseGates | None = None,
) -> AiperfOutcome:
    """Run `cmd` to completion (or `deadline_s`), streaming records; returns the judged outcome.

    Blocks for the whole run. Publishes AiperfStarted, LogLine, ClientRecord, AiperfExited. On
    cancellation the process group gets SIGINT, then SIGKILL after `stop_grace_s`; AiperfExited
    (cancelled) is still published and the cancellation propagates.
    `on_exit` is called the moment the AIPerf process has ended, before its files are awaited and judged.
    Setting `stop` asks for a graceful end as the deadline does (SIGINT, then SIGKILL after the grace), so
    this function stays the one owner of AIPerf's process. Raises ClientError when it cannot be started.
    `phases` (a command from phased_command): each load's name -> its window, `window` being the first. Each
    window gets its own AiperfStarted (as its first phase starts), records, issued counts and AiperfExited.
    `gates` (the phased command's): a gated load's window starts only once its gate says run; a skipped one is
    no window at all (the first load too: held, its AiperfStarted waits for its gate; `spawned_ns` says when
    the process began). Every load still undecided when the process ends is skipped.
    """
    artifact_dir = Path(cmd.artifact_dir)
    await anyio.Path(artifact_dir).mkdir(parents=True, exist_ok=True)
    tap_dir = Path(cmd.env["AQBENCH_TAP_DIR"]) if "AQBENCH_TAP_DIR" in cmd.env else None
    for key in ("AQBENCH_TAP_DIR", "TMPDIR"):
        if key in cmd.env:
            await anyio.Path(cmd.env[key]).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **cmd.env}
    if tap_dir is None:
        env.pop("AQBENCH_TAP_DIR", None)  # an inherited value would point the tap somewhere else
    t0, spawned_ns = time.monotonic_ns(), time.time_ns()
    try:
        proc = await anyio.open_process(cmd.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, env=env, cwd=str(cwd or artifact_dir),
                                        start_new_session=True)
    except OSError as exc:
        raise ClientError(f"cannot start AIPerf ({cmd.argv[0]}): {exc}; run `aqbench doctor`") from exc
    # Ours until reaped: AIPerf renames itself (setproctitle), which blanks the owner mark in its
    # environment, and a server's orphan sweep must never take it for a server's orphan.
    with spawned_here(proc.pid):
        counts = _Counts(_phase_windows(phases, cmd.argv))
        loads = {phases[name]: flags for name, flags in _window_loads(cmd.argv).items() if name in phases} if phases else {}

        def started(w: str) -> AiperfStarted:
            return AiperfStarted(source="aiperf", window=w, argv=cmd.argv, shell=cmd.shell,
                                 artifact_dir=str(artifact_dir), pid=proc.pid, version=install.version if install else "",
                                 fingerprint=install.fingerprint if install else "", input_file=cmd.input_file,
                                 load=loads.get(w, []), spawned_ns=spawned_ns)

        window = next(iter(phases.values())) if phases else window
        # A first load held at its gate starts as its gate opens (the pump), or never when it is skipped.
        first_held = _first_held(phases, gates)
        if not first_held:
            counts.started += [window] if phases else []
            await bus.publish(started(window))
        stop_tailers = anyio.Event()
        log_tail: list[str] = []
        stopped_early = False
        outcome: AiperfOutcome | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_tail_export, artifact_dir / "profile_export.jsonl", bus, window, stop_tailers, counts)
                if tap_dir is not None:
                    tg.start_soon(_tail_taps, tap_dir, bus, window, stop_tailers, counts)
                # A service process that outlives AIPerf keeps the pipe open: the pump is cancelled then.
                pump_scope = anyio.CancelScope()
                counts.gated = _gated_starts(gates, phases, counts, bus, started, tg)
                tg.start_soon(_pump_logs, proc, bus, log_tail, pump_scope, counts, started if phases else None)
                with anyio.move_on_after(deadline_s) as deadline:
                    await _wait_exit_or_stop(proc, stop)
                if deadline.cancelled_caught:
                    stopped_early = True
                    await bus.publish(Warned(source="aiperf", code="aiperf_deadline",
                                             message=f"AIPerf window {window} passed its deadline of "
                                                     f"{deadline_s:g} s; stopping it with SIGINT"))
                    await _stop(proc, stop_grace_s)
                elif proc.returncode is None:  # a stop was asked for
                    stopped_early = True
                    await bus.publish(Warned(source="aiperf", code="aiperf_stop_requested",
                                             message=f"AIPerf window {window}: stop requested; stopping it with SIGINT"))
                    await _stop(proc, stop_grace_s)
                _skip_undecided(gates)  # a load the process never reached, or still at its gate, is skipped
                if on_exit is not None:
                    on_exit()
                # Exports are finalised after exit: wait for the marker and stable sizes, then stop tailing.
                # Exit 0 means AIPerf finishes its files; a failed or signalled AIPerf may never write a marker.
                quiet = None if proc.returncode == 0 else _QUIET_S
                await wait_artifacts_final(artifact_dir, timeout_s=_FINAL_WAIT_S, quiet_s=quiet)
                stop_tailers.set()
                pump_scope.deadline = anyio.current_time() + 2.0
            # The tap and the export carry the same requests' records: the larger of the two is how many were
            # streamed (their sum counted each request twice).
            judged = await anyio.to_thread.run_sync(lambda: judge_artifacts(
                artifact_dir, returncode=proc.returncode, stopped_early=stopped_early,
                records=max(counts.by_via["export"], counts.by_via["tap"])))
            reason = judged.reason
            said = _own_reason(log_tail)
            if said and proc.returncode not in (0, None) and judged.classification != "complete":
                reason += f"; AIPerf exited {proc.returncode}: {said}"
            elif judged.classification == "failed" and log_tail:
                reason += "; last output: " + " | ".join(log_tail[-5:])
            issued, issued_from = issued_counts(counts.sent, judged.aggregate.get("phases"))
            outcome = AiperfOutcome(window=window, classification=judged.classification, reason=reason,
                                    returncode=proc.returncode, aggregate=judged.aggregate,
                                    artifact_dir=str(artifact_dir), duration_ns=time.monotonic_ns() - t0,
                                    records={**counts.by_via, "bad_lines": counts.bad_lines},
                                    issued=issued, issued_from=issued_from,
                                    windows=_windows_issued(counts, judged.classification, judged.aggregate))
        finally:
            _skip_undecided(gates)
            with anyio.CancelScope(shield=True), anyio.move_on_after(stop_grace_s + 5):
                await _stop(proc, stop_grace_s)
                # AIPerf's service processes share its group; sweep any that outlived the main process, and reap
                # those left to us (the subreaper): nobody else will, and a zombie at a soak's end fails it.
                signal_group(proc.pid, signal.SIGKILL)
                await proc.aclose()
                await reap_members(proc.pid)
                await anyio.to_thread.run_sync(_tidy, cmd, artifact_dir)
                if outcome is None:
                    await _publish_cancelled(bus, counts.started or [window][first_held:], proc.returncode, t0)
        await _publish_exits(bus, outcome, phased=bool(phases))
        return outcome


def _tidy(cmd: AiperfInvocation, artifact_dir: Path) -> None:
    """Once AIPerf is gone: its inputs.json (a copy of the clips, in base64) and raw export trimmed unless
    kept, and its short TMPDIR removed (ours, outside the run folder: leave nothing behind). Blocks."""
    if not cmd.keep_inputs:
        trim_artifacts(artifact_dir)
    tmp = cmd.env.get("TMPDIR", "")
    if Path(tmp).name.startswith(SHORT_TMP_PREFIX):
        shutil.rmtree(tmp, ignore_errors=True)


def _gated_starts(gates: PhaseGates | None, phases: Mapping[str, str] | None, counts: _Counts, bus: EventSink,
                  started: Callable[[str], AiperfStarted], tg: TaskGroup) -> dict[str, Callable[[], object] | None]:
    """Per gated window, what to call as AIPerf reaches its gate: a task that starts the window (its
    AiperfStarted) once the gate says run, and does nothing for a skipped one."""
    if gates is None or not phases:
        return {}

    async def start_if_run(window: str, name: str) -> None:
        if await gates.decided(name):
            counts.started.append(window)
            await bus.publish(started(window))

    return {phases[name]: functools.partial(tg.start_soon, start_if_run, phases[name], name)
            for name in gates.names if name in phases}


def _first_held(phases: Mapping[str, str] | None, gates: PhaseGates | None) -> bool:
    """Whether the run's first load is gated (held until aqbench says run: a sweep's first batch, spawned
    beside the capability probe)."""
    return bool(phases) and gates is not None and next(iter(phases or {})) in gates.names


def _skip_undecided(gates: PhaseGates | None) -> None:
    if gates is not None:
        gates.close()


async def _publish_cancelled(bus: EventSink, windows: list[str], returncode: int | None, t0: int) -> None:
    for w in windows:
        await bus.publish(AiperfExited(source="aiperf", window=w, returncode=returncode, classification="cancelled",
                                       reason="aqbench was cancelled", duration_ns=time.monotonic_ns() - t0))


async def _publish_exits(bus: EventSink, outcome: AiperfOutcome, *, phased: bool) -> None:
    """AiperfExited for the run's window, or for each window of a phased run with its own counts."""
    ones = outcome.windows if phased else {outcome.window: WindowIssued(
        issued=outcome.issued, issued_from=outcome.issued_from, classification=outcome.classification)}
    for w, one in ones.items():
        await bus.publish(AiperfExited(source="aiperf", window=w, returncode=outcome.returncode,
                                       classification=one.classification,  # type: ignore[arg-type]
                                       reason=outcome.reason, duration_ns=outcome.duration_ns,
                                       aggregate={**outcome.aggregate, "records": outcome.records,
                                                  "issued": one.issued, "issued_from": one.issued_from}))


def _phase_windows(phases: Mapping[str, str] | None, argv: list[str]) -> dict[str, tuple[str, str]] | None:
    """A phased run's AIPerf phase names -> (window, kind): each load's profiling phase and its warmup."""
    if not phases:
        return None
    out: dict[str, tuple[str, str]] = {}
    for name, window in phases.items():
        out[f"warmup_{name}"] = (window, "warmup")
        out[name] = (window, "profiling")
    return out


def _window_loads(argv: list[str]) -> dict[str, list[str]]:
    """Per window of a phased run, its load as AIPerf flags (for the correlator's in-flight bound), read back
    from the phases file the command names."""
    path = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"), None)
    if path is None:
        return {}
    try:
        doc = msgspec.json.decode(Path(path).read_bytes())
    except (OSError, msgspec.DecodeError):
        return {}
    timeout = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--request-timeout-seconds"), "")
    out: dict[str, list[str]] = {}
    for phase in doc.get("benchmark", {}).get("phases", []):
        if phase.get("kind") != "profiling":
            continue
        if phase.get("type") == "concurrency":
            flags = ["--concurrency", str(phase.get("concurrency"))]
        else:
            flags = ["--request-rate", f"{phase.get('rate'):g}", "--arrival-pattern", str(phase.get("type"))]
        out[phase["name"]] = [*flags, *(["--request-timeout-seconds", timeout] if timeout else [])]
    return out


def _windows_issued(counts: _Counts, classification: str, aggregate: Json) -> dict[str, WindowIssued]:
    """Each started window's issued counts (its phases' sending-complete lines, else the manifest's records)
    and its classification: the run's where it was cancelled or failed, else by its own phases' errors."""
    manifest = aggregate.get("phases") if isinstance(aggregate.get("phases"), dict) else {}
    out: dict[str, WindowIssued] = {}
    for w in counts.started:
        sent: dict[str, int] = {}
        kept: dict[str, object] = {}
        errors = 0
        for name, (window, kind) in counts.phases.items():
            if window != w:
                continue
            if name in counts.sent_named:
                sent[kind] = counts.sent_named[name]
            if isinstance(manifest, dict) and isinstance(manifest.get(name), dict):
                kept[kind] = manifest[name]
                errors += (manifest[name].get("errors") or 0) if kind == "profiling" else 0
        issued, issued_from = issued_counts(sent, kept)
        own = classification if classification in ("cancelled", "failed") else (
            "partial" if errors or (classification == "partial" and not kept) else "complete")
        out[w] = WindowIssued(issued=issued, issued_from=issued_from, classification=own)
    return out
