"""The sweep's point watch: collects its window's profiling requests from a real bus, and asks the point to
stop once they clearly break an SLO, never on evidence that cannot decide."""

from __future__ import annotations

import random

import anyio
import pytest

from orchestrator.config import CorrectnessCriteria, SloConfig
from orchestrator.events import AccountingChecked, RequestCorrelated
from orchestrator.spine.bus import Bus
from orchestrator.sweep.judge import PointRequest
from orchestrator.sweep.watch import PointWatch

pytestmark = pytest.mark.anyio

SLO = SloConfig(max_error_rate=0.05, answers=False, complete_outputs=False)


def _fact(c: RequestCorrelated) -> PointRequest:
    return PointRequest(ok=c.ok, cause=c.cause, latency_ms=c.request_latency_ms, start_ns=c.request_start_ns,
                        end_ns=c.request_end_ns)


async def _watch(events: list[RequestCorrelated], *, early: bool, planned: int | None = None) -> PointWatch:
    bus = Bus("r")
    watch = PointWatch(bus, "m/c2-1", fact=_fact, slo=SLO, baseline=None, criteria=CorrectnessCriteria(),
                       earlier=[] if early else None, stop=anyio.Event(), planned=planned)
    async with anyio.create_task_group() as tg:
        await tg.start(watch.run)
        for ev in events:
            await bus.publish(ev)
        await bus.publish(AccountingChecked(window="m/c2-1", balanced=True))
        assert await watch.wait_accounted(5.0)
        tg.cancel_scope.cancel()
    return watch


def _req(i: int, ok: bool, window: str = "m/c2-1", phase: str = "profiling") -> RequestCorrelated:
    return RequestCorrelated(request_id=f"r{i}", window=window, phase=phase, ok=ok,  # type: ignore[arg-type]
                             cause="ok" if ok else "http_5xx", request_latency_ms=100.0,
                             request_start_ns=i * 10**9, request_end_ns=i * 10**9 + 10**8)


class TestPointWatch:
    async def test_errors_beyond_doubt_stop_the_point(self) -> None:
        """Half the requests failing against a 5% limit sets the stop event, naming the broken SLO."""
        watch = await _watch([_req(i, ok=i % 2 == 0) for i in range(10)], early=True)
        assert watch.stop.is_set() and [c.slo for c in watch.broken] == ["error_rate"]

    async def test_healthy_requests_never_stop_it(self) -> None:
        """Requests that all succeed leave the point running; only its window's profiling ones are kept."""
        events = [_req(i, ok=True) for i in range(20)] + [_req(99, ok=False, window="m/c1-1"),
                                                          _req(98, ok=False, phase="warmup")]
        watch = await _watch(events, early=True)
        assert not watch.stop.is_set() and len(watch.requests) == 20
        assert watch.span_s == 19.1

    async def test_without_early_stop_it_only_collects(self) -> None:
        """The baseline run is never stopped, whatever its errors."""
        watch = await _watch([_req(i, ok=False) for i in range(10)], early=False)
        assert not watch.stop.is_set() and len(watch.requests) == 10


def _markov(p: float, rho: float, n: int, rng: random.Random) -> list[RequestCorrelated]:
    """n requests failing at stationary rate p, in runs: lag-1 correlation rho (a server's bad patches)."""
    out, prev = [], False
    for i in range(n):
        prev = rng.random() < (p + rho * (1.0 - p) if prev else p * (1.0 - rho))
        out.append(_req(i, ok=not prev))
    return out


class TestInterimLooks:
    """Seeded: the looks every 5 requests stop a healthy point almost never (the verdict's own level, looked at a
    dozen times, stopped 2.7 % of points at 2 % errors and 16 % at the limit), and still stop a clearly broken
    one."""

    async def _stopped(self, p: float, seeds: int, n: int = 60) -> tuple[float, float]:
        stopped, at = 0, []
        for seed in range(seeds):
            watch = await _watch(_markov(p, 0.3, n, random.Random(seed)), early=True, planned=n)
            if watch.stop.is_set():
                stopped += 1
                at.append(watch.stopped_at or 0)
        return stopped / seeds, (sum(at) / len(at) if at else 0.0)

    async def test_a_healthy_point_in_bad_patches_is_not_stopped(self) -> None:
        share, _ = await self._stopped(0.02, 300)
        assert share <= 0.01
        at_limit, _ = await self._stopped(0.05, 300)  # the verdict itself decides a point at its limit
        assert at_limit <= 0.02

    async def test_a_clearly_broken_point_is_stopped_early(self) -> None:
        """Half the requests failing against a 5 % limit: every point stopped, on average within its first third;
        30 % failing, in patches: most stopped, within the first half (the rest left to the point's verdict)."""
        share, mean_at = await self._stopped(0.50, 100)
        assert share == 1.0 and mean_at <= 20
        share, mean_at = await self._stopped(0.30, 100)
        assert share >= 0.85 and mean_at <= 32

    async def test_a_long_point_is_not_stopped_more_often(self) -> None:
        """600 requests, 120 looks: the looks' level rises with their number (a 1 % budget over them), so a point
        at the limit is still seldom stopped, and one clearly broken still is."""
        at_limit, _ = await self._stopped(0.05, 100, n=600)
        assert at_limit <= 0.02
        share, mean_at = await self._stopped(0.30, 20, n=600)
        assert share == 1.0 and mean_at <= 60
