"""The soak's subscribers' own cost per request, behind a real Bus: every step of the tree it runs in.

Publishes N requests' events (a ClientRecord and a RequestCorrelated each, an AIPerf memory sample per 100) and
times until every soak subscriber has folded them. Run it against an older tree (PYTHONPATH) to compare:

    .venv/bin/python bench/soak_steps.py [--requests 100000] [--repeats 3]
    git archive REV | tar -x -C /tmp/rev && PYTHONPATH=/tmp/rev .venv/bin/python bench/soak_steps.py
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import time
from types import SimpleNamespace
from typing import Any

import anyio

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import ClientRecord, Event, ProcessSampled, RequestCorrelated
from orchestrator.soak.tracker import SoakTracker
from orchestrator.spine.bus import Bus

T0 = 1_800_000_000 * 10**9


def _steps(bus: Bus, tracker: SoakTracker) -> list[Any]:
    """The soak's bus subscribers in this tree: the tracker alone before the soak was cut into steps."""
    steps: list[Any] = [tracker]
    if importlib.util.find_spec("orchestrator.soak.progress") is not None:
        from orchestrator.soak.evidence import EvidenceCollector
        from orchestrator.soak.progress import LoadProgress

        steps += [LoadProgress(bus), EvidenceCollector(bus)]
    return steps


async def _once(requests: int) -> tuple[float, int]:
    bus = Bus("bench")
    model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
    tracker = SoakTracker(bus, None, model)  # type: ignore[arg-type]
    steps = _steps(bus, tracker)
    async with anyio.create_task_group() as tg:
        for step in steps:
            await tg.start(step.run)
        tracker.open_window(1, T0)
        gc.collect()
        start = time.perf_counter()
        last: Event | None = None
        for i in range(requests):
            t = T0 + i * 10**7
            await bus.publish(ClientRecord(request_id=f"r{i}", aiperf_run="soak/aiperf01", phase="profiling",
                                           session_num=i, credit_issued_ns=t, request_start_ns=t,
                                           request_end_ns=t + 10**6))
            last = await bus.publish(RequestCorrelated(
                request_id=f"r{i}", window="soak/w0001", phase="profiling", ok=False, cause="http_5xx", item_id="a",
                request_start_ns=t, request_end_ns=t + 10**6, request_latency_ms=1.0, handler_ms=1.0))
            if i % 100 == 0:
                await bus.publish(ProcessSampled(role="aiperf", pid=11, rss_bytes=800 * 2**20, ts_ns=t))
        assert last is not None
        with anyio.fail_after(60):
            for step in steps:
                while step.last_seq < last.seq:
                    await anyio.sleep(0.001)
        elapsed = time.perf_counter() - start
        tg.cancel_scope.cancel()
    return elapsed, len(steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    runs = [anyio.run(_once, args.requests) for _ in range(args.repeats)]
    best = min(r[0] for r in runs)
    print(f"{runs[0][1]} soak subscriber(s): {best / args.requests * 1e6:.1f} us per request through the bus "
          f"(best of {args.repeats}, {args.requests:,} requests)")


if __name__ == "__main__":
    main()
