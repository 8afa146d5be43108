"""Heap care for aqbench's own process during a soak, whose own memory is judged (`orchestrator_rss`): two glibc
settings, each a no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["MMAP_THRESHOLD_BYTES", "MallInfo", "keep_large_blocks_off_heap", "mallinfo", "trim_heap"]

MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value, before its dynamic rise
_M_MMAP_THRESHOLD = -3  # <malloc.h>
_libc: ctypes.CDLL | bool | None = None  # None: not looked up yet; False: no glibc


class MallInfo(ctypes.Structure):
    """glibc's `struct mallinfo2`: `uordblks` bytes in use, `fordblks` free bytes kept, `arena` heap bytes,
    `hblkhd` bytes in blocks with their own mapping (all arenas summed)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _glibc() -> ctypes.CDLL | None:
    """glibc, with the argument types set, or None (not glibc: musl, macOS); looked up once."""
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            lib.malloc_trim.argtypes = [ctypes.c_size_t]
            lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            if hasattr(lib, "mallinfo2"):  # glibc 2.33 and later
                lib.mallinfo2.restype = MallInfo
            _libc = lib
        except (OSError, AttributeError):  # not glibc (musl, macOS)
            _libc = False
    return _libc if isinstance(_libc, ctypes.CDLL) else None


def keep_large_blocks_off_heap(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes for the rest of the process; False where unavailable.
    Affects later allocations only, so call it before the soak starts.

    By default the threshold rises to the size of the largest block freed so far, after which window-sized
    arrays, sets and journal batches come from the heap; each leaves a hole that the next, larger one cannot
    reuse. Over a 100-requests/s soak the heap's free bytes climbed about 1 MiB a minute (measured in
    bench/RESULTS.md). A fixed threshold hands every block of 128 KiB or more its own mapping, returned to the
    kernel when freed.
    """
    lib = _glibc()
    return lib is not None and lib.mallopt(_M_MMAP_THRESHOLD, threshold) == 1


def trim_heap() -> bool:
    """Hand the C heap's free pages back to the OS (glibc `malloc_trim(0)`); False where unavailable or
    nothing was released. Blocks for milliseconds (about 1 ms): the soak calls it before each sample of
    aqbench's own memory (every `[server] sample_period_s`), covering every glibc arena."""
    lib = _glibc()
    return lib is not None and bool(lib.malloc_trim(0))


def mallinfo() -> MallInfo | None:
    """Where glibc's memory sits now (`mallinfo2`); None without glibc 2.33 or later. For benchmarks and
    tests: it walks every arena."""
    lib = _glibc()
    if lib is None or not hasattr(lib, "mallinfo2"):
        return None
    info: MallInfo = lib.mallinfo2()
    return info
