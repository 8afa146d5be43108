"""The correlator as a lossless bus subscriber: feeds the join, publishes what it derives, closes windows on
request, ticks timeouts; the join itself (join.py) stays pure."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from orchestrator.correlate.join import Joiner, KeyParser
from orchestrator.events import (
    AccountingChecked,
    AiperfStarted,
    ClientRecord,
    Event,
    ServerExited,
    ServerRecord,
    SoakWindowOpened,
)
from orchestrator.spine.bus import Bus
from orchestrator.spine.pulse import Pulse

__all__ = ["Correlator", "in_flight_bound"]

# What _handle reads: the bus wakes the correlator for these only, not for every log line of a run.
_INPUTS = (ClientRecord, ServerRecord, ServerExited, SoakWindowOpened, AiperfStarted)


def _flag(argv: list[str], name: str) -> str | None:
    """The value of AIPerf's `--name V` or `--name=V` (None when absent)."""
    for i, arg in enumerate(argv):
        if arg.startswith(f"{name}="):
            return arg.partition("=")[2]
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def in_flight_bound(argv: list[str]) -> int:
    """How many requests AIPerf could have had open at once: `--concurrency N`; in rate mode, as many as
    its rate can start within one request timeout (R x T, plus 6 of its sd and 6 with Poisson arrivals,
    whose bursts past that have odds under 1e-9), plus one; 0 when it cannot be told."""
    try:
        concurrency = int(_flag(argv, "--concurrency") or 0)
        rate = float(_flag(argv, "--request-rate") or 0)
        timeout = float(_flag(argv, "--request-timeout-seconds") or 0)
    except ValueError:
        return 0
    if concurrency > 0:
        return concurrency
    if rate <= 0 or timeout <= 0:
        return 0
    mean = rate * timeout
    burst = 6 * math.sqrt(mean) + 6 if _flag(argv, "--arrival-pattern") == "poisson" else 0.0
    return math.ceil(mean + burst) + 1


class Correlator:
    """Runs a Joiner as a lossless bus subscriber and publishes what it derives.

    `await tg.start(correlator.run)`; `await correlator.close_window(window)` at the end of each
    AIPerf run. Publishing goes through Subscription.publish, which spills this subscriber's own queue
    into its backlog while the bus is full, so the bus cannot deadlock on this subscriber.
    """

    def __init__(self, bus: Bus, *, key_parser: KeyParser | None = None, match_timeout_s: float = 5.0,
                 tick_s: float = 0.05, name: str = "correlator", size: int = 8192,
                 answer_grace_s: float = 0.0, cut_by_time: bool = False) -> None:
        self._bus = bus
        self.joiner = Joiner(key_parser=key_parser, match_timeout_s=match_timeout_s,
                             answer_grace_s=answer_grace_s, cut_by_time=cut_by_time)
        self.match_timeout_s = match_timeout_s
        self._tick_s = tick_s
        self._name = name
        self._size = size
        self._sub: Any = None
        self._backlog: deque[Any] = deque()
        self._lock = anyio.Lock()
        self._last_seq = 0
        self._started = anyio.Event()
        self._progress = Pulse()  # after each batch and tick: close_window and an idle tick wait on it

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Consume the bus until it closes or this task is cancelled. Ready once subscribed."""
        async with self._bus.subscribe(self._name, size=self._size, kinds=_INPUTS) as sub:
            self._sub = sub
            self._started.set()
            task_status.started()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._tick)
                async for batch in sub.batches():
                    async with self._lock:
                        self._backlog.extend(batch)
                        await self._process_backlog()
                    self._progress.pulse()
                tg.cancel_scope.cancel()

    async def _tick(self) -> None:
        while True:
            if self.joiner.idle():
                await self._progress.wait()  # nothing waits on time: sleep until input arrives
            await anyio.sleep(self._tick_s)
            async with self._lock:
                for ev in self.joiner.expire(time.monotonic_ns()):
                    await self._publish(ev)
                await self._process_backlog()
            self._progress.pulse()

    async def _process_backlog(self) -> None:
        while self._backlog:
            ev = self._backlog.popleft()
            self._last_seq = max(self._last_seq, ev.seq)
            for out in self._handle(ev):
                await self._publish(out)

    def _handle(self, ev: Event) -> Iterable[Event]:
        now = time.monotonic_ns()
        if isinstance(ev, ClientRecord):
            return self.joiner.add_client(ev, now)
        if isinstance(ev, ServerRecord):
            return self.joiner.add_server(ev, now)
        if isinstance(ev, ServerExited) and not ev.expected:
            return self.joiner.server_exited(ev.incarnation, ev.exited_unix_ns or ev.ts_ns, now)
        if isinstance(ev, SoakWindowOpened):
            self.joiner.start_window(ev.window, ev.start_unix_ns)
        elif isinstance(ev, AiperfStarted) and self.joiner.cut_by_time:
            self.joiner.bound_in_flight(in_flight_bound(ev.argv))  # a soak's windows are cut from this run
        elif isinstance(ev, AiperfStarted):
            self.joiner.start_window(ev.window, ev.ts_ns, concurrency=in_flight_bound([*ev.argv, *ev.load]))
        return ()

    async def _publish(self, ev: Event) -> Event:
        published: Event = await self._sub.publish(ev, spill=self._backlog.append)
        return published

    async def close_window(self, window: str, *, expected: dict[str, int] | None = None,
                           expected_from: dict[str, str] | None = None,
                           timeout_s: float | None = None, carry: bool = False) -> AccountingChecked:
        """Wait until everything published so far is processed and the window's client halves have
        settled (at most `timeout_s`, by default match timeout + 1 s), then publish the window's accounting
        and return it. `carry`: see Joiner.close_window. Blocks; cancellation leaves the window open."""
        await self._caught_up(timeout_s if timeout_s is not None else self.match_timeout_s + 1.0, window)
        async with self._lock:
            await self._process_backlog()
            checked: Event | None = None
            for ev in self.joiner.close_window(window, expected=expected, expected_from=expected_from, carry=carry):
                stamped = await self._publish(ev)
                if isinstance(stamped, AccountingChecked):
                    checked = stamped
        assert isinstance(checked, AccountingChecked)
        return checked

    async def _caught_up(self, limit_s: float, window: str | None = None) -> None:
        """Wait (at most `limit_s`) until all published so far is processed (and `window`'s halves settled)."""
        await self._started.wait()
        target = self._sub.wanted_seq  # the last event published so far that this correlator takes in
        with anyio.move_on_after(limit_s):
            while self._last_seq < target or (window is not None and self.joiner.open_clients(window)):
                await self._progress.wait()  # no await between the check and the wait: no lost signal

    def open_tail(self, window: str) -> None:
        """A soak segment's tail: `window` takes what its windows closed on time carry once no later window is
        open (Joiner.start_window without a start: no record is cut into it by time)."""
        self.joiner.start_window(window)

    async def discard_window(self, window: str) -> bool:
        """`Joiner.discard_window` once everything published so far is processed. Blocks briefly."""
        await self._caught_up(self.match_timeout_s + 1.0)
        async with self._lock:
            await self._process_backlog()
            return self.joiner.discard_window(window)
