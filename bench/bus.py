"""Bus throughput: events/s through publish -> journal + one more lossless subscriber, against the
ceiling of msgspec-encoding the same events and appending them to a file with no bus. One run, one core.

Run: .venv/bin/python bench/bus.py [--events 300000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import anyio
import msgspec

from orchestrator.events import ClientRecord
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import JournalWriter


def make_events(n: int) -> list[ClientRecord]:
    # Realistic payload: a client record as the AIPerf tailer publishes it.
    return [
        ClientRecord(request_id=f"req-{i:08x}", conversation_id=f"item-{i % 48:04d}@audio", phase="profiling",
                     request_start_ns=1_700_000_000_000_000_000 + i, request_end_ns=1_700_000_000_100_000_000 + i,
                     status_code=200, request_latency_ms=100.0 + i % 7, answer="The second tone is higher.")
        for i in range(n)
    ]


def ceiling(events: list[ClientRecord], path: Path) -> float:
    """Encode + append + flush per 2048 events, no bus: the best the journal could do."""
    enc = msgspec.json.Encoder()
    buf = bytearray()
    t0 = time.perf_counter()
    with path.open("ab") as fh:
        for start in range(0, len(events), 2048):
            buf.clear()
            for ev in events[start:start + 2048]:
                enc.encode_into(ev, buf, -1)
                buf.extend(b"\n")
            fh.write(buf)
            fh.flush()
        os.fsync(fh.fileno())
    return len(events) / (time.perf_counter() - t0)


async def through_bus(events: list[ClientRecord], path: Path) -> tuple[float, int]:
    bus = Bus("bench")
    counted = 0

    async def counter(task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        nonlocal counted
        async with bus.subscribe("counter", size=8192) as sub:
            task_status.started()
            async for batch in sub.batches():
                counted += len(batch)

    writer = JournalWriter(path)
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run, bus)
        await tg.start(counter)
        publish = bus.publish
        for ev in events:
            await publish(ev)
        await bus.aclose()
    elapsed = time.perf_counter() - t0
    assert counted == len(events) and writer.lines == len(events), (counted, writer.lines)
    return len(events) / elapsed, writer.lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=300_000)
    args = ap.parse_args()
    events = make_events(args.events)
    with tempfile.TemporaryDirectory() as tmp:
        base = ceiling(events, Path(tmp) / "ceiling.jsonl")
        rate, lines = anyio.run(through_bus, events, Path(tmp) / "events.jsonl")
        size = (Path(tmp) / "events.jsonl").stat().st_size
    print(f"events                 {args.events}")
    print(f"ceiling (encode+write) {base:12,.0f} events/s")
    print(f"bus -> journal + 1 sub {rate:12,.0f} events/s   ({lines} lines, {size / 1e6:.1f} MB)")
    print(f"ratio bus/ceiling      {rate / base:12.2f}   (goal: >= 200,000 events/s and ratio >= 0.3)")


if __name__ == "__main__":
    main()
