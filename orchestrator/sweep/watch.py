"""One point's requests, collected from the bus as the correlator joins them, and judged as they come: a
point that has clearly broken an SLO is asked to stop early (its `stop` event is set).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import msgspec
from anyio.abc import TaskStatus

from orchestrator.config import CorrectnessCriteria, SloConfig
from orchestrator.events import AccountingChecked, NoticeContext, RequestCorrelated, SloCheck, Warned
from orchestrator.spine.bus import Bus
from orchestrator.sweep.judge import Baseline, PointRequest, judge_point

__all__ = ["INTERIM_BUDGET", "INTERIM_CONFIDENCE", "PointWatch"]

# Like qualify's WindowCollector, it has every request of its window once it has seen the window's AccountingChecked.
# Only a decided fail stops a point, and "clearly" is stricter than the point's verdict: each interim look (every few
# requests) judges at INTERIM_CONFIDENCE, not [slo] confidence. Looking a dozen times at the verdict's own level fails
# a healthy point far more often than its one verdict does (seeded, 300 points of 60 requests failing in patches,
# lag-1 0.3, against a 5 % limit at 90 %: at 2 % errors 2.7 % of points stopped where the one verdict failed none; at
# 5 %, the limit, 16 % against 4 %). At 99.9 % each look adds at most about 0.1 % (Haybittle-Peto): 0 % and 0.3 %
# stopped, while half the requests failing stops every point, on average by its 16th request
# (tests/orchestrator/sweep/test_sweep_watch.py). The point's verdict, judged once on every request it sent, keeps its
# stated error rates.
INTERIM_CONFIDENCE = 0.999
# A run's looks together may stop a point that its verdict would not have failed at most this often (Bonferroni
# over its looks): a run of `planned` requests looks at each at 1 - INTERIM_BUDGET / looks, never below
# INTERIM_CONFIDENCE, so a long point (600 requests, 120 looks) is not stopped more often than a short one.
INTERIM_BUDGET = 0.01

# Re-judging every request would be quadratic on a long point; every this many requests is enough to stop
# within a small share of the point.
_JUDGE_EVERY = 5


class PointWatch:
    """A lossless subscriber keeping `window`'s profiling requests (as judge facts) in `requests`.

    `await tg.start(watch.run)` before the load starts; after `Correlator.close_window(window)`,
    `await watch.wait_accounted(timeout_s)`; then cancel the task group. `earlier` are the point's requests
    from its earlier runs (judged pooled with these), or what gives them at each look (a run in the same batch as
    an earlier one); None: never stop early. `baseline` likewise: the reference answers, or what gives them
    once known (None: the answers cannot fail a look). `planned`: the run's planned requests (its looks' level).
    """

    def __init__(self, bus: Bus, window: str, *, fact: Callable[[RequestCorrelated], PointRequest],
                 slo: SloConfig, baseline: Baseline | Callable[[], Baseline | None] | None,
                 criteria: CorrectnessCriteria,
                 earlier: list[PointRequest] | Callable[[], list[PointRequest]] | None, stop: anyio.Event,
                 planned: int | None = None, size: int = 65536) -> None:
        self._bus = bus
        self.window = window
        self._fact = fact
        self._baseline, self._criteria = baseline, criteria
        looks = max(1, (planned or 0) // _JUDGE_EVERY)
        interim = max(slo.confidence, INTERIM_CONFIDENCE, 1.0 - INTERIM_BUDGET / looks)
        self._interim = msgspec.structs.replace(slo, confidence=interim)
        self._earlier = earlier
        self.stop = stop
        self._size = size
        self.requests: list[PointRequest] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.broken: list[SloCheck] = []  # the checks that stopped the point early (empty: it ran out)
        self.stopped_at: int | None = None  # how many of its requests were in when it was asked to stop
        self._accounted = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Consume the bus until cancelled or closed. Ready once subscribed."""
        async with self._bus.subscribe(f"sweep:{self.window}", size=self._size) as sub:
            task_status.started()
            async for ev in sub:
                if isinstance(ev, RequestCorrelated) and ev.window == self.window and ev.phase == "profiling":
                    self._add(ev)
                elif isinstance(ev, AccountingChecked) and ev.window == self.window:
                    self._accounted.set()

    def _add(self, ev: RequestCorrelated) -> None:
        self.requests.append(self._fact(ev))
        if ev.request_start_ns is not None:
            self.starts.append(ev.request_start_ns)
        if ev.request_end_ns is not None:
            self.ends.append(ev.request_end_ns)
        if self._earlier is None or self.stop.is_set() or len(self.requests) % _JUDGE_EVERY:
            return
        earlier = self._earlier() if callable(self._earlier) else self._earlier
        baseline = self._baseline() if callable(self._baseline) else self._baseline
        checks = judge_point(earlier + self.requests, self._interim, baseline, self._criteria)
        failed = [c for c in checks if c.outcome == "fail"]
        if failed:
            self.broken, self.stopped_at = failed, len(self.requests)
            self.stop.set()

    @property
    def span_s(self) -> float:
        """The profiling requests' first start to last end, in seconds (0 without both)."""
        return max(0.0, (max(self.ends) - min(self.starts)) / 1e9) if self.starts and self.ends else 0.0

    async def wait_accounted(self, timeout_s: float) -> bool:
        """Block until the window's AccountingChecked was seen (True), or `timeout_s` passed: then a Warned
        event says so and False is returned, so the caller judges knowingly."""
        with anyio.move_on_after(timeout_s):
            await self._accounted.wait()
            return True
        await self._bus.publish(Warned(source="sweep", code="window_collection_timed_out", message=(
            f"window {self.window}: the correlator's accounting did not reach the sweep within {timeout_s:g} s; "
            f"judging the {len(self.requests)} requests collected so far"),
            detail=NoticeContext(model=self.window.split("/", 1)[0])))
        return False
