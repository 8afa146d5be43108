"""The whole-process mode of bench/soak_memory.py: `soak()` in this process against scripted stand-ins.

Runs the real soak (supervisor, bus, journal writer, tailers, correlator, tracker, observer sampler,
checkpoint reports) against tests/data/stub_server.py and bench/soak_load.py, then reads aqbench's own
RSS per window back from the journal. With `trace`, snapshots tracemalloc every window's length and
prints the allocation sites that grew most since the first snapshot.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from heap_probe import HeapProbe  # noqa: E402  (bench/ is on sys.path as the script's folder)

import adapters.aiperf as aiperf_adapter  # noqa: E402
from adapters.aiperf.install import AiperfInstall  # noqa: E402
from orchestrator.commands.wiring import real_toolkit  # noqa: E402
from orchestrator.config import load_config  # noqa: E402
from orchestrator.run import Interrupt  # noqa: E402
from orchestrator.soak import SoakOptions, soak  # noqa: E402
from orchestrator.soak.verdicts import fit_trend  # noqa: E402
from orchestrator.spine.logs import configure_logging  # noqa: E402

GOAL_MIB_PER_100K = 1.0


def _config(folder: Path, *, duration_s: float, window_s: float, warmup_windows: int, timeout_s: float,
            checkpoint_s: float) -> Path:
    text = (REPO / "bench.toml").read_text()
    # The stub answers in 2 ms: a short timeout closes each window soon after its end (see run_whole).
    text = text.replace("request_timeout_s = 60.0", f"request_timeout_s = {timeout_s}", 1)
    text = text.replace('output_dir = "runs"', f'output_dir = "{folder / "runs"}"')
    stub = REPO / "tests" / "data" / "stub_server.py"
    text = re.sub(r'argv = \[.*?\]\n', f'argv = ["{{python}}", "{stub}", "--host", "{{host}}", "--port", "{{port}}", '
                  f'"--model-name", "{{model}}", "--records", "{{records}}", "--latency-ms", "2"]\n', text, count=1,
                  flags=re.S)
    text = re.sub(r"\[soak\][^\[]*", f"""[soak]
duration_s = {duration_s}
window_s = {window_s}
warmup_windows = {warmup_windows}
checkpoint_every_s = {checkpoint_s or window_s * 2}
min_trend_windows = 6
min_trend_span_s = {window_s * 5}
rss_limit_mib_per_h = 8.0

""", text)
    # The stub's answers are not the dataset's: correctness is not what this bench measures.
    text = text.replace("min_pass_rate = 0.9", "min_pass_rate = 0.0").replace("count = 1.0", "count = 0.0")
    path = folder / "bench.toml"
    path.write_text(text)
    return path


def _fake_aiperf(folder: Path) -> str:
    exe = folder / "aiperf"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {REPO / 'bench' / 'soak_load.py'} \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


async def _probe_every(probe: HeapProbe, period_s: float, mark_after_s: float) -> None:
    """A probe line every `period_s`; from `mark_after_s` on (the steady state), the mappings that grew."""
    started = time.monotonic()
    while True:
        await anyio.sleep(period_s)
        since = time.monotonic() - started
        print(probe.probe(f"{since:.0f} s"), file=sys.stderr, flush=True)
        if probe.first_maps is None and since >= mark_after_s:
            probe.mark()
        elif probe.first_maps is not None:
            print(probe.maps_diff(), file=sys.stderr, flush=True)


class _Tracer:
    """A tracemalloc snapshot every window's length; prints the sites grown most since snapshot `base`
    (taken once the first window has closed: before that, every open window's state grows by design)."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.first: tracemalloc.Snapshot | None = None

    async def every(self, period_s: float) -> None:
        index = 0
        while True:
            await anyio.sleep(period_s)
            index += 1
            self.snapshot(index)

    def snapshot(self, index: int) -> None:
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        if index < self.base:
            return
        if self.first is None:
            self.first = snap
            return
        top = snap.compare_to(self.first, "lineno")[:6]
        print(f"snapshot {index}: traced {sum(s.size for s in snap.statistics('filename')) / 2**20:.1f} MiB; "
              f"grown most since snapshot {self.base}:", file=sys.stderr)
        for stat_ in top:
            print(f"    {stat_.size_diff / 1024:+9.1f} KiB {stat_.count_diff:+7d} blocks  {stat_.traceback[0]}",
                  file=sys.stderr)


def run_whole(*, duration_s: float, window_s: float, rate: float, trace: bool, probe_s: float = 0.0,
              timeout_s: float = 10.0, checkpoint_s: float = 0.0) -> int:
    folder = Path(tempfile.mkdtemp(prefix="aqb-soakmem-"))
    # Until the first window closes (its end + the request timeout + 3 s) every open window's state grows
    # by design: those windows are the verdict's warmup, so orchestrator_rss judges the steady state.
    first_close = math.ceil((window_s + timeout_s + 3) / window_s)
    cfg = load_config(_config(folder, duration_s=duration_s, window_s=window_s, warmup_windows=first_close,
                              timeout_s=timeout_s, checkpoint_s=checkpoint_s))
    assert cfg.workload.request_timeout_s == timeout_s, "bench.toml's [workload] request_timeout_s moved"
    exe = _fake_aiperf(folder)
    aiperf_adapter.check_install = lambda: AiperfInstall(version="stand-in", fingerprint="", executable=exe)
    aiperf_adapter.ensure_tokenizer = lambda configured="", **_: folder
    configure_logging(level="warning")
    # A window closes at its end + the request timeout + 3 s: the steady state starts after the first close.
    base = first_close + 1
    tracer = _Tracer(base) if trace else None
    if tracer is not None:
        tracemalloc.start(1)

    probe = HeapProbe() if probe_s else None
    if probe is not None:
        print(probe.header(), file=sys.stderr)

    async def main() -> int:
        async with anyio.create_task_group() as tg:
            if tracer is not None:
                tg.start_soon(tracer.every, window_s)
            if probe is not None:
                tg.start_soon(_probe_every, probe, probe_s, (first_close + 1) * window_s)
            rc = await soak(cfg, SoakOptions(argv=["bench/soak_memory.py", "--whole"], request_rate=rate), Interrupt(),
                            real_toolkit())
            tg.cancel_scope.cancel()
        return rc

    rc = anyio.run(main)
    run_dir = next((folder / "runs").glob("*soak-*"))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    windows = [e["summary"] for e in events if e["kind"] == "soak_window_closed"]
    verdict = next(e for e in events if e["kind"] == "soak_verdict" and e["final"]
                   and e["metric"] == "orchestrator_rss")
    total = 0
    points = []
    print("| window | requests (cumulative) | aqbench RSS median MiB | AIPerf stand-in RSS MiB |")
    print("|---|---|---|---|")
    for w in windows:
        total += w["issued"] + w["warmup_issued"]
        own = (w["orchestrator_rss"] or {}).get("median_bytes")
        load = (w["aiperf_rss"] or {}).get("median_bytes")
        print(f"| {w['window']} | {total:,} | {own / 2**20 if own else float('nan'):.1f} | "
              f"{load / 2**20 if load else float('nan'):.1f} |")
        if own:
            points.append((total, own / 2**20))
    tail = points[first_close:]
    trend = fit_trend([n / 100_000 for n, _ in tail], [r for _, r in tail]) if len(tail) >= 2 else None
    print(f"exit {rc}; {total:,} requests in {len(windows)} windows of {window_s:g} s "
          f"({total / max(duration_s, 1):,.0f} requests/s); run folder {run_dir}")
    if trend:
        print(f"aqbench RSS slope from window {first_close + 1} on: {trend.slope_per_h:+.3f} MiB per 100,000 requests "
              f"(goal under {GOAL_MIB_PER_100K}); first-vs-last median growth {trend.growth_per_h:+.3f}")
    print(f"orchestrator_rss verdict: {verdict['outcome'].upper()}: {verdict['reason']}")
    if os.environ.get("AQB_KEEP") is None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0
