"""A run's scope: its folder, bus, journal and logs, opened together and closed in order.
`open_run` journals RunStarted first and RunFinished last (status from how the body ended); `run_main`
runs an async command under SIGINT/SIGTERM handling so that cleanup always runs (exit 130 / 143)."""

from __future__ import annotations

import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import msgspec
from anyio.abc import TaskGroup

from orchestrator.base.errors import UsageError
from orchestrator.config import Config
from orchestrator.events import Failed, RunFinished, RunStarted
from orchestrator.run.provenance import host_facts, tool_versions
from orchestrator.run.writing import WritingMark
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import COMPACT_JOURNAL, PLAIN_JOURNAL, JournalWriter
from orchestrator.spine.logs import attach_run_log, bind_contextvars, detach_run_log, get_logger, unbind_contextvars
from orchestrator.supervision.host_sampler import HostSampler

__all__ = ["RunScope", "Interrupt", "open_run", "run_main", "new_run_id"]

log = get_logger("aqbench.run")


@dataclass
class Interrupt:
    """Which signal (if any) interrupted the command; set by run_main's watcher."""

    signum: int | None = None
    # While a finished run's live page lingers (--serve-linger): a signal cancels only this scope, so it ends
    # the wait and the run's own exit code stands.
    linger: anyio.CancelScope | None = None

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum else 0


@dataclass
class RunScope:
    """What a command gets inside `open_run`: the run's identity, folder, bus and task group."""

    run_id: str
    run_dir: Path
    bus: Bus
    tg: TaskGroup
    config: Config
    interrupt: Interrupt
    status: str = "ok"
    exit_code: int = 0
    reason: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    writer: JournalWriter | None = None
    # Tasks that outlive the body and the run's task group: they end after the bus closes, so they see
    # RunFinished (the live page). Shield them and bound their cleanup: the run waits for them.
    after: TaskGroup | None = None

    @property
    def journal_path(self) -> Path:
        return self.writer.path if self.writer is not None else self.run_dir / PLAIN_JOURNAL

    async def flush_journal(self, timeout_s: float = 30.0) -> bool:
        """Block until every event published so far is in events.jsonl (for a reader in another process),
        or for at most `timeout_s`; True when it is."""
        return self.writer is not None and await self.writer.wait_written(self.bus.statistics().published, timeout_s)

    def finish(self, *, status: str, exit_code: int, reason: str = "", counts: dict[str, int] | None = None) -> None:
        """Set what RunFinished will say."""
        self.status, self.exit_code, self.reason = status, exit_code, reason
        if counts:
            self.counts = counts


def new_run_id(name: str) -> str:
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


@asynccontextmanager
async def open_run(
    config: Config,
    *,
    command: str,
    argv: list[str] | None = None,
    interrupt: Interrupt | None = None,
    run_dir: Path | None = None,
    close_timeout_s: float = 30.0,
    compact: bool = False,
) -> AsyncIterator[RunScope]:
    """Create `runs/<run_id>/`, start the journal writer and open the bus; on exit journal RunFinished
    (shielded, even when cancelled), drain the bus and fsync. The body runs inside the run's task group.
    `compact`: the journal is `events.jsonl.zst` (orchestrator/spine/journal.py) instead of `events.jsonl`."""
    run_id = run_dir.name if run_dir else new_run_id(config.run.name or command)
    run_dir = run_dir or Path(config.run.output_dir) / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    try:  # held until the journal is closed: `aqbench runs` never prunes a run still being written
        mark = WritingMark(run_dir)
    except BlockingIOError as exc:
        raise UsageError(f"{run_dir}: another aqbench process is writing this run folder; pick another "
                         f"[run] name or wait for it to end") from exc
    attach_run_log(run_dir / "aqbench.log")
    bind_contextvars(run_id=run_id)
    bus = Bus(run_id)
    interrupt = interrupt or Interrupt()
    scope = RunScope(run_id=run_id, run_dir=run_dir, bus=bus, tg=None, config=config,  # type: ignore[arg-type]
                     interrupt=interrupt)
    try:
        async with anyio.create_task_group() as outer:
            # The writer is shielded: cancelling the run must not stop it before the cleanup's own
            # events (server exits, orphans, RunFinished) are written. It ends when the bus closes.
            scope.writer = JournalWriter(run_dir / (COMPACT_JOURNAL if compact else PLAIN_JOURNAL))
            await outer.start(_write_journal, scope.writer, bus)
            scope.after = outer
            try:
                async with anyio.create_task_group() as tg:
                    scope.tg = tg
                    await bus.publish(RunStarted(
                        source="run", command=command, argv=list(argv if argv is not None else sys.argv),
                        config_path=config.source, config_sha256=config.sha256, config=config,
                        tool_versions=tool_versions(), host=host_facts(), run_dir=str(run_dir.resolve()),
                    ))
                    log.info("run_started", run_dir=str(run_dir), command=command)
                    # Every run samples the host's condition (load, steal, outside CPU): compare and ab show it.
                    await tg.start(HostSampler(bus).run)
                    yield scope
                    # The body is done: background tasks it started (samplers, the console view) stop now;
                    # their shielded cleanups still run before RunFinished is journaled.
                    tg.cancel_scope.cancel()
            except BaseException as exc:
                if _is_cancellation(exc):
                    scope.finish(status="interrupted", exit_code=interrupt.exit_code or 130,
                                 reason=f"interrupted by {signal.Signals(interrupt.signum).name}"
                                 if interrupt.signum else "cancelled")
                else:
                    real = _first_error(exc) if isinstance(exc, BaseExceptionGroup) else exc
                    scope.finish(status="error", exit_code=getattr(real, "exit_code", 3), reason=str(real))
                    with anyio.CancelScope(shield=True), anyio.move_on_after(close_timeout_s) as failing:
                        await bus.publish(Failed(source="run", code=type(real).__name__, message=str(real)))
                    if failing.cancelled_caught:  # the bus is stuck: the log says it, and RunFinished's reason
                        log.error("run_failure_not_journaled", waited_s=close_timeout_s, error=str(real),
                                  subscribers=[msgspec.to_builtins(s) for s in bus.statistics().subscribers])
                raise
            finally:
                # After the run's task group: every task's cleanup has published what it had to say.
                with anyio.CancelScope(shield=True):
                    with anyio.move_on_after(close_timeout_s) as publishing:
                        await bus.publish(RunFinished(source="run", status=scope.status,  # type: ignore[arg-type]
                                                      exit_code=scope.exit_code, reason=scope.reason,
                                                      counts=scope.counts))
                    if publishing.cancelled_caught:
                        log.error("run_finished_not_journaled", waited_s=close_timeout_s,
                                  subscribers=[msgspec.to_builtins(s) for s in bus.statistics().subscribers])
                    # Always close, even when RunFinished could not be published: the shielded journal
                    # writer ends only when the bus closes.
                    await bus.aclose(timeout_s=close_timeout_s)
                    if bus.stuck:
                        log.error("subscribers_force_closed", subscribers=bus.stuck)
                    log.info("run_finished", status=scope.status, exit_code=scope.exit_code)
    finally:
        unbind_contextvars("run_id")
        detach_run_log()
        mark.release()


async def _write_journal(writer: JournalWriter, bus: Bus,
                         *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.CancelScope(shield=True):
        await writer.run(bus, task_status=task_status)


def _is_cancellation(exc: BaseException) -> bool:
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_cancellation(e) for e in exc.exceptions)
    return isinstance(exc, cancelled)


def run_main(body: Callable[[Interrupt], Awaitable[int]]) -> int:
    """Run `body` on asyncio; SIGINT/SIGTERM cancel it (its cleanup still runs). Returns the exit code."""

    async def main() -> int:
        interrupt = Interrupt()
        rc = 0
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for signum in signals:
                        if interrupt.linger is not None:
                            interrupt.linger.cancel()
                            continue
                        interrupt.signum = int(signum)
                        log.warning("signal_received", signal=signal.Signals(signum).name)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            try:
                rc = await body(interrupt)
            finally:
                tg.cancel_scope.cancel()
        return interrupt.exit_code if interrupt.signum else rc

    try:
        return anyio.run(main)
    except BaseExceptionGroup as group:
        raise _first_error(group) from None


def _first_error(group: BaseExceptionGroup) -> BaseException:
    """Task groups wrap errors; a command reports the first real one (AqbenchError keeps its exit code)."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)
        return exc
    return group
