"""When a soak window may close: within a second of its planned end, while its AIPerf run goes on (docs/soak.md,
"Windows close on time"); and the looks its closes ask for."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import anyio

from orchestrator.soak.progress import LoadProgress
from orchestrator.spine.race import first_of

__all__ = ["CLOSE_WAIT_S", "Looks", "wait_closable", "wait_last_closable"]

# The longest a window waits after its end for its last requests; the close itself (the join caught up,
# the tracker caught up, the summary frozen) takes the rest of the second.
CLOSE_WAIT_S = 0.5


# A window closes as soon as every request that started before its end has been seen (AIPerf's gap-free
# session numbers, sessions.py), and at the latest `CLOSE_WAIT_S` after its end. A request of the window still
# open then is not lost and the window is not reopened: once it ends it counts in the oldest open window, as
# `carried` in that window's accounting (Joiner.close_window(carry=True)), so every request still counts in
# exactly one window. A segment's last window has no later window: see wait_last_closable.
async def wait_closable(progress: LoadProgress, aiperf_windows: str | Sequence[str], end_ns: int, *,
                        done: anyio.Event, wait_s: float = CLOSE_WAIT_S) -> bool:
    """Wait until the window that ends at `end_ns` (wall clock) may close: every request of the AIPerf runs
    `aiperf_windows` (two during a handover; a halted one covers every boundary once all it sent is seen)
    started before `end_ns` seen (True), or `wait_s` past `end_ns`, or the runs ended (False: a request may
    still be open, and will be carried)."""
    # Not a copy: a successor that starts sending while this window is open joins the list (a handover),
    # and the window then waits for its requests too.
    names = [aiperf_windows] if isinstance(aiperf_windows, str) else aiperf_windows
    covered = False

    async def seen_all() -> None:
        nonlocal covered
        while True:
            known = len(names)
            for name in names[:known]:
                await progress.wait_covered(name, end_ns)
            if len(names) == known:
                break
        covered = True

    with anyio.move_on_after(max(0.0, (end_ns - time.time_ns()) / 1e9 + wait_s)):
        await first_of(seen_all, done.wait)
    return covered


# A segment's last window: its runs stop issuing at its end and say what they sent (AIPerf's sending-complete line,
# or a handover's halt fact), which gives its last session number. Once all of it is seen, nothing of the window
# is open and it closes at once (at its end, if that is later). Otherwise it closes `wait_s` after its end (or as
# soon as the last count is told, when later), and what is still open counts in the runs' tail (cutter.py,
# SoakTail), once. A run that never says
# (a killed AIPerf) keeps the window open until the runs have ended, as before: its close is at their exit.
async def wait_last_closable(progress: LoadProgress, aiperf_windows: Sequence[str], end_ns: int, *,
                             sent_of: Callable[[str], int | None], done: anyio.Event,
                             wait_s: float = CLOSE_WAIT_S) -> bool | None:
    """Wait until a segment's last window, ending at `end_ns`, may close before its runs `aiperf_windows` have
    ended: True once every run has told what it sent (`sent_of`), all of it is seen and `end_ns` has come; False
    once each has told and `wait_s` has passed since `end_ns` (a request may still be open: the tail takes it);
    None when the runs ended first (`done`: close at their exit)."""
    out: bool | None = None

    async def told() -> None:
        nonlocal out
        while True:
            # Not a copy of the list: a successor that takes over meanwhile must be told and seen too.
            counts = [(name, sent_of(name)) for name in list(aiperf_windows)]
            if any(n is None for _, n in counts):
                await progress.next_batch()
                continue
            seen = all(progress.ledger(name).next >= n for name, n in counts if n is not None)
            to_end_s = (end_ns - time.time_ns()) / 1e9
            if seen and to_end_s <= 0:
                out = True
                return
            if to_end_s + wait_s <= 0:
                out = False
                return
            # Never before its end (a load halted early ends its windows at the exit, as before).
            with anyio.move_on_after(to_end_s if seen else to_end_s + wait_s):
                await progress.next_batch()

    await first_of(told, done.wait)
    return None if done.is_set() and out is None else out


# A close publishes the window's summary and asks for a look; the verdicts and checkpoints run beside the
# closes, so a slow look or report never delays the next close.
class Looks:
    """The looks (verdicts, checkpoint) that window closes ask for, run one at a time by one looker task:
    the closes asked for while a look runs are coalesced into the next (it judges every window closed by then)."""

    def __init__(self) -> None:
        self._asked = 0
        self._ended = False
        self._wake = anyio.Event()

    def ask(self) -> None:
        """A window has closed: look once the look now running (if any) has ended. Never blocks."""
        self._asked += 1
        self._wake.set()

    def end(self) -> None:
        """No more closes: the looker runs what is still asked for, then `next` returns False."""
        self._ended = True
        self._wake.set()

    async def next(self) -> bool:
        """Wait for a look to run (True), or for the end with none left (False)."""
        while not self._asked:
            if self._ended:
                return False
            await self._wake.wait()
            self._wake = anyio.Event()
        self._asked = 0
        return True
