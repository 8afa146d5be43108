"""A heap probe (and a timing-manager spin switch) that rides into AIPerf's spawned service processes (run by hand beside bench/aiperf_processes.py; bench/RESULTS.md says how).

Put this folder on PYTHONPATH with AQB_TRACE_OUT=<folder>: every Python process imports it at start-up,
and a daemon thread waits until its process title says it is AIPerf's worker ("aiperf worker_...").
(AIPerf forks its services on Linux, so the thread is started again in each forked child.)
Only there it starts tracemalloc (AQB_TRACE_FRAMES frames), snapshots every AQB_TRACE_EVERY seconds,
and writes, per snapshot, the process's RSS, the traced total, counts of live objects by type and the
allocation sites grown most since the first snapshot. Any other process: the thread ends at once.
AQB_TIMING_NO_SPIN=<seconds> (bench/aiperf_processes.py --env): see _no_spin.
"""

from __future__ import annotations

import os
import threading
import time


def _title() -> str:
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _rss_kib() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _types() -> dict[str, int]:
    import gc

    out: dict[str, int] = {}
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        out[name] = out.get(name, 0) + 1
    return out


def _describe(obj: object) -> str:
    name = type(obj).__qualname__
    if isinstance(obj, dict):
        return f"dict keys={sorted(map(str, obj))[:8]}"
    if isinstance(obj, (list, tuple, set, frozenset)):
        return f"{name} len={len(obj)}"
    return f"{type(obj).__module__}.{name}"


def _chains(obj: object, depth: int, seen: set[int], skip: set[int], lines: list[str], indent: str = "") -> None:
    """Who holds `obj`, `depth` levels up (frames and the probe's own lists left out)."""
    import gc
    import types

    if depth == 0:
        return
    for ref in gc.get_referrers(obj):
        if id(ref) in skip or id(ref) in seen or isinstance(ref, types.FrameType):
            continue
        seen.add(id(ref))
        lines.append(f"{indent}<- {_describe(ref)}")
        if len(lines) > 400:
            return
        _chains(ref, depth - 1, seen, skip, lines, indent + "   ")


def _referrers(out_dir: str) -> None:
    """Without tracemalloc (full speed): every AQB_TRACE_EVERY s the count of live objects by type, and at
    the last one who holds the oldest-found aiohttp TraceConfig objects."""
    import gc
    import json

    every = float(os.environ.get("AQB_TRACE_EVERY", "30"))
    count = int(os.environ.get("AQB_TRACE_COUNT", "6"))
    name = f"{out_dir}/referrers-{os.getpid()}"
    first: dict[str, int] = {}
    for i in range(count):
        time.sleep(every)
        types_now = _types()
        row: dict[str, object] = {"i": i, "wall_ns": time.time_ns(), "rss_kib": _rss_kib(),
                                  "counts": {k: types_now.get(k, 0) for k in (
                                      "TraceConfig", "AioHttpTraceData", "Signal", "ClientSession",
                                      "RequestRecord", "ClientResponse", "ResponseHandler", "tuple", "function")}}
        if not first:
            first = types_now
        row["grown"] = sorted(((types_now.get(k, 0) - first.get(k, 0), k) for k in types_now), reverse=True)[:15]
        if i == count - 1:
            objs = gc.get_objects()
            found = [o for o in objs if type(o).__qualname__ == "TraceConfig"][:3]
            lines: list[str] = []
            for obj in found:
                lines.append(f"TraceConfig {id(obj):x}")
                _chains(obj, 7, set(), {id(objs), id(found), id(lines)}, lines, "  ")
            del objs
            row["chains"] = lines
        with open(f"{name}.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")


def _no_spin() -> None:
    """AQB_TIMING_NO_SPIN=<seconds>: in AIPerf's timing manager, the rate loop's bare yields (a spin while
    every concurrency slot is taken) become sleeps of that long. A measurement of what the spin costs,
    not a fix: it delays the next credit by up to that long after a slot frees."""
    import asyncio

    for _ in range(120):
        if _title().startswith("aiperf timing_manager"):
            break
        time.sleep(0.5)
    else:
        return
    from aiperf.timing.strategies import request_rate

    pause = float(os.environ["AQB_TIMING_NO_SPIN"])

    def _sleep() -> object:
        return asyncio.sleep(pause)

    request_rate.yield_to_event_loop = _sleep  # type: ignore[assignment]


def _probe(out_dir: str) -> None:
    import json
    import tracemalloc

    for _ in range(600):
        if _title().startswith("aiperf worker"):
            break
        if "aiperf" not in _title() and "multiprocessing" not in _title() and "spawn" not in _title():
            return
        time.sleep(1.0)
    else:
        return
    if os.environ.get("AQB_TRACE_MODE") == "referrers":
        _referrers(out_dir)
        return
    frames = int(os.environ.get("AQB_TRACE_FRAMES", "12"))
    every = float(os.environ.get("AQB_TRACE_EVERY", "30"))
    count = int(os.environ.get("AQB_TRACE_COUNT", "12"))
    tracemalloc.start(frames)
    name = f"{out_dir}/worker-{os.getpid()}"
    first = None
    first_types: dict[str, int] = {}
    for i in range(count):
        time.sleep(every)
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)])
        types = _types()
        row: dict[str, object] = {"i": i, "wall_ns": time.time_ns(), "rss_kib": _rss_kib(),
                                  "traced_kib": tracemalloc.get_traced_memory()[0] // 1024}
        if first is None:
            first, first_types = snap, types
        else:
            stats = snap.compare_to(first, "traceback")[:15]
            row["top"] = [{"size_diff_kib": s.size_diff / 1024, "count_diff": s.count_diff,
                           "trace": [f"{f.filename}:{f.lineno}" for f in s.traceback]} for s in stats]
            row["types"] = sorted(((types.get(k, 0) - first_types.get(k, 0), k) for k in types), reverse=True)[:25]
        with open(f"{name}.jsonl", "a") as fh:
            fh.write(json.dumps(row) + "\n")


def _start() -> None:
    if os.environ.get("AQB_TIMING_NO_SPIN"):
        threading.Thread(target=_no_spin, daemon=True, name="aqb-no-spin").start()
    out = os.environ.get("AQB_TRACE_OUT")
    if out:
        threading.Thread(target=_probe, args=(out,), daemon=True, name="aqb-trace").start()


_start()
# AIPerf forks its services on Linux: a forked child keeps only the forking thread, so start again there.
os.register_at_fork(after_in_child=_start)
