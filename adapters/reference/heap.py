"""Heap care for the reference server: glibc's arena cap and mmap threshold, periodic `malloc_trim`, and tracemalloc
snapshot differences.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import time
import tracemalloc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

__all__ = ["DEFAULT_ARENAS", "DEFAULT_MMAP_THRESHOLD_KIB", "DEFAULT_TRIM_EVERY_S", "WARM_UP_ENV", "HeapCounters", "HeapSettings",
           "SnapshotWriter", "fix_mmap_threshold", "limit_arenas", "snapshot_every", "trim_every", "trim_heap",
           "warm_up_from_env"]

# glibc gives each new thread its own arena, up to 8 per core; every thread that ever ran an engine call (anyio's
# worker threads come and go) keeps its arena's high-water mark. Measured over two passes of the 415 requests
# of audioqa-v2 at 3 in flight: 2 arenas held the climb to +26 MiB where the default rose +31 and then kept
# stepping, at the same speed.
# `limit_arenas` caps glibc's malloc arenas (on by default: 2). `trim_heap` every 10 s returns freed heap pages to the
# kernel (on by default; glibc only, elsewhere a no-op that says so). `fix_mmap_threshold` pins the size from which
# glibc serves a block by mmap, and snapshots trace Python allocations (both off by default).
DEFAULT_ARENAS = 2
# "0" turns the warm-up pass off wherever the server or its native worker starts (what --no-warm-up does for one
# server): for runs that spawn many short-lived servers and judge no memory, such as the test suite's.
WARM_UP_ENV = "AQBENCH_REFERENCE_WARM_UP"
# glibc's mmap threshold starts at 128 KiB and then slides up to the largest mmapped block freed (up to 32 MiB).
# After the first long clip, a long request's buffers (its base64 body, the decoded and resampled audio, Whisper's
# features: 1-3 MiB each) come from the heap, each at a new high-water mark between the small blocks kept
# meanwhile: the 40-minute soak at 1 request/s climbed 5-7 MiB at the long clip of every pass or two (+36.7
# MiB/h). Pinning the threshold at 128 KiB keeps RSS flat but maps and faults in every such block afresh: the
# engine took 1.5x as long (67 -> 101-112 ms a request over audioqa-v2, engine alone). Off by default: the
# periodic trim (below) returns those freed pages to the kernel for less (no cost back to back in the engine
# alone; 12-23 % beside an untrimmed server). It slows the climb where long requests overlap, not stops it.
DEFAULT_MMAP_THRESHOLD_KIB = 0
# malloc_trim(0) also releases the free pages inside the heap (madvise), not only its top, in every arena.
DEFAULT_TRIM_EVERY_S = 10.0
_M_MMAP_THRESHOLD = -3  # mallopt parameter numbers (malloc.h)
_M_ARENA_MAX = -8
_TOP = 40  # allocation sites listed per comparison
_FRAMES = 8  # traceback depth kept per allocation (the top frame names the site; more cost memory)


@dataclass(frozen=True, slots=True)
class HeapSettings:
    """Zero / None means off; the warm-up pass is on unless asked off."""

    warm_up: bool = True
    malloc_arenas: int = DEFAULT_ARENAS
    mmap_threshold_kib: int = DEFAULT_MMAP_THRESHOLD_KIB
    malloc_trim_every_s: float = DEFAULT_TRIM_EVERY_S
    tracemalloc_dir: Path | None = None
    tracemalloc_every_s: float = 600.0

    @property
    def active(self) -> list[str]:
        names = ["warm_up"] if self.warm_up else []
        if self.malloc_arenas:
            names.append(f"malloc_arenas={self.malloc_arenas}")
        if self.mmap_threshold_kib:
            names.append(f"mmap_threshold={self.mmap_threshold_kib}KiB")
        if self.malloc_trim_every_s:
            names.append("malloc_trim")
        if self.tracemalloc_dir is not None:
            names.append("tracemalloc")
        return names


def warm_up_from_env(environ: Mapping[str, str]) -> bool:
    """Whether `WARM_UP_ENV` leaves the warm-up on (unset, "1") or turns it off ("0"); raises ValueError otherwise."""
    value = environ.get(WARM_UP_ENV, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"{WARM_UP_ENV}={value!r}: expected 0 (no warm-up pass) or 1 (the default)")
    return value == "1"


@dataclass(slots=True)
class HeapCounters:
    """What the heap chores did so far (the server's /metrics shows them); touched on the loop thread only."""

    trims: int = 0
    trims_released: int = 0  # trims after which glibc said it returned memory
    snapshots: int = 0


def _libc(symbol: str, argtypes: list[type]) -> Callable[..., int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        fn = getattr(ctypes.CDLL(name), symbol)
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to call
        return None
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return cast("Callable[..., int]", fn)


_TRIM = _libc("malloc_trim", [ctypes.c_size_t])
_MALLOPT = _libc("mallopt", [ctypes.c_int, ctypes.c_int])


def limit_arenas(n: int) -> bool | None:
    """`mallopt(M_ARENA_MAX, n)`, before the threads start: True when glibc took it, None without glibc."""
    if _MALLOPT is None:
        return None
    return bool(_MALLOPT(_M_ARENA_MAX, n))


def fix_mmap_threshold(kib: int) -> bool | None:
    """`mallopt(M_MMAP_THRESHOLD, kib KiB)`, which also stops glibc sliding it: True when glibc took it, None
    without glibc."""
    if _MALLOPT is None:
        return None
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, kib * 1024))


def trim_heap() -> bool | None:
    """`malloc_trim(0)`: True when glibc released memory, False when none, None without glibc."""
    if _TRIM is None:
        return None
    return bool(_TRIM(0))


async def trim_every(every_s: float, counters: HeapCounters) -> None:
    """`trim_heap` in a thread every `every_s` seconds (it holds the arena locks while it walks), until cancelled."""
    while True:
        await asyncio.sleep(every_s)
        released = await asyncio.to_thread(trim_heap)
        counters.trims += 1
        counters.trims_released += bool(released)


async def snapshot_every(every_s: float, writer: SnapshotWriter, counters: HeapCounters) -> None:
    """`writer.write()` every `every_s` seconds, on the loop thread, until cancelled (a snapshot holds the GIL
    for its whole time anyway, so a thread would not let the loop run meanwhile)."""
    while True:
        await asyncio.sleep(every_s)
        writer.write()
        counters.snapshots = writer.written


def _format(stats: list[tracemalloc.StatisticDiff], title: str) -> list[str]:
    grown = sum(s.size_diff for s in stats)
    lines = [f"## {title}: {grown / 1024:+.1f} KiB over {len(stats)} sites; top {_TOP} by growth"]
    for s in sorted(stats, key=lambda s: s.size_diff, reverse=True)[:_TOP]:
        frame = s.traceback[0]
        lines.append(f"{s.size_diff / 1024:+10.1f} KiB {s.count_diff:+7d} blocks  now {s.size / 1024:10.1f} KiB  "
                     f"{frame.filename}:{frame.lineno}")
    return lines


# Writes, at start and every N seconds, the Python allocation sites that grew since start and since the previous
# snapshot, so growth in our own code is found by its line.
class SnapshotWriter:
    """Start tracemalloc; each `write()` files `tracemalloc-NNN.txt` under `folder` comparing with start
    and with the previous snapshot (by allocation line), plus the total traced memory."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._started = not tracemalloc.is_tracing()
        if self._started:
            tracemalloc.start(_FRAMES)
        self._filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
        self._first: tracemalloc.Snapshot | None = None
        self._last: tracemalloc.Snapshot | None = None
        self._t0 = time.monotonic()
        self.written = 0

    def write(self) -> Path:
        """Take a snapshot and write its differences; the first one is the baseline (its top sites only)."""
        snap = tracemalloc.take_snapshot().filter_traces(self._filters)
        current, peak = tracemalloc.get_traced_memory()
        path = self.folder / f"tracemalloc-{self.written:03d}.txt"
        lines = [f"# snapshot {self.written} at +{time.monotonic() - self._t0:.0f} s: traced {current / 2**20:.2f} MiB "
                 f"(peak {peak / 2**20:.2f} MiB)"]
        if self._first is None or self._last is None:
            self._first = snap
            lines.append(f"## baseline: top {_TOP} sites by size")
            for s in snap.statistics("lineno")[:_TOP]:
                frame = s.traceback[0]
                lines.append(f"{s.size / 1024:10.1f} KiB {s.count:7d} blocks  {frame.filename}:{frame.lineno}")
        else:
            lines += _format(snap.compare_to(self._first, "lineno"), "since start")
            lines += _format(snap.compare_to(self._last, "lineno"), "since the previous snapshot")
        self._last = snap
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.written += 1
        return path

    def close(self) -> None:
        """Stop tracing if this writer started it."""
        if self._started:
            tracemalloc.stop()
            self._started = False
