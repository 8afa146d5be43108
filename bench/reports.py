"""Benchmark `aqbench report`: events/s and peak memory of the report fold over a large journal,
side by side with the ceiling of only decoding the same journal (iter_journal, nothing kept) and with
loading it whole (read_journal, what a non-streaming report would hold).

Run: .venv/bin/python bench/reports.py [--requests 100000]   (one core; prints ratios; goals: fold
>= 30 % of the decode-only rate, and fold peak memory <= 25 % of loading the journal whole).
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

import msgspec

from orchestrator.config import Config, load_config
from orchestrator.events import (
    AiperfStarted,
    AnyEvent,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    ResourceSampled,
    RunFinished,
    RunStarted,
)
from orchestrator.reports import build_report, encode_report, render_html, render_markdown
from orchestrator.spine.journal import encode_event, iter_journal, read_journal

T0 = 1_714_564_800_000_000_000


def _config() -> Config:
    """The repository's bench.toml with its one model named `m`, as the journal's config snapshot."""
    cfg = load_config(Path(__file__).resolve().parents[1] / "bench.toml")
    return msgspec.structs.replace(cfg, models=[msgspec.structs.replace(cfg.models[0], name="m")])


def write_journal(path: Path, requests: int) -> int:
    """A qualify-shaped journal: one model whose AIPerf window holds `requests` correlated requests."""
    seq = 0
    with path.open("wb") as fh:

        def put(ev: AnyEvent, ts: int) -> None:
            nonlocal seq
            seq += 1
            fh.write(encode_event(msgspec.structs.replace(ev, seq=seq, ts_ns=ts, run_id="bench")) + b"\n")

        put(RunStarted(command="qualify", config=_config()), T0)
        put(PhaseStarted(phase="model", model="m"), T0 + 1)
        put(PhaseStarted(phase="aiperf", model="m"), T0 + 2)
        put(AiperfStarted(window="m/aiperf", argv=["aiperf"], shell="aiperf profile", artifact_dir="/a"), T0 + 3)
        for i in range(requests):
            start = T0 + i * 5_000_000
            lat = 20.0 + (i * 7919 % 1000) / 10
            if i % 500 == 0:
                put(ResourceSampled(incarnation=1, pid=1, rss_bytes=(100 << 20) + i * 64), start)
            put(RequestCorrelated(
                request_id=f"req-{i:08d}", window="m/aiperf", phase="profiling", conversation_id=f"c{i}",
                item_id=f"item-{i % 120:03d}", arm="audio", ok=i % 97 != 0, cause="ok" if i % 97 else "http_5xx",
                http_status=200, answer="thursday", request_start_ns=start, request_end_ns=start + int(lat * 1e6),
                request_latency_ms=lat, client_lifecycle_ms=lat + 1.5, handler_ms=lat - 2.0,
                worker_roundtrip_ms=lat - 3.0, model_call_ms=lat - 4.0, timing_scope="public_task_call_wall",
                incarnation=1, audio_seconds=2.3, audio_bytes=73_600), start + int(lat * 1e6))
        end = T0 + requests * 5_000_000 + 10**9
        put(PhaseFinished(phase="aiperf", model="m", outcome="passed"), end)
        put(PhaseFinished(phase="model", model="m", outcome="passed"), end + 1)
        put(RunFinished(status="ok"), end + 2)
    return seq


def _timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _peak(fn) -> int:  # type: ignore[no-untyped-def]
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        events = write_journal(path, args.requests)
        size = os.path.getsize(path)
        print(f"journal: {events:,} events, {size / 2**20:.1f} MiB")

        t_decode, _ = _timed(lambda: sum(1 for _ in iter_journal(path)))
        t_fold, report = _timed(lambda: build_report(path))
        t_render, _ = _timed(lambda: (encode_report(report), render_markdown(report), render_html(report)))  # type: ignore[arg-type]
        m_whole = _peak(lambda: read_journal(path))
        m_fold = _peak(lambda: build_report(path))

    print(f"{'measure':<44}{'result':>16}")
    print(f"{'ceiling: decode only (iter_journal)':<44}{events / t_decode:>12,.0f} ev/s")
    print(f"{'report fold (build_report)':<44}{events / t_fold:>12,.0f} ev/s")
    print(f"{'  ratio fold / decode':<44}{t_decode / t_fold:>16.2f}")
    print(f"{'render json + md + html':<44}{t_render * 1000:>13.1f} ms")
    print(f"{'peak memory: read_journal (whole)':<44}{m_whole / 2**20:>12.1f} MiB")
    print(f"{'peak memory: build_report (streaming)':<44}{m_fold / 2**20:>12.1f} MiB")
    print(f"{'  ratio fold / whole':<44}{m_fold / m_whole:>16.3f}")


if __name__ == "__main__":
    main()
