"""The soak's heap care: large blocks off glibc's heap once the threshold is fixed, and trimming."""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys

import pytest

from orchestrator.soak.heap import keep_large_blocks_off_heap, trim_heap

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt and malloc_trim only")

# Frees a 4 MiB block (glibc's dynamic threshold rises to 4 MiB), then allocates 1 MiB and prints how many
# bytes glibc has mmapped for it: 0 when the block came from the heap.
_PROBE = """
import sys
from orchestrator.soak.heap import keep_large_blocks_off_heap, mallinfo
if sys.argv[1] == "fixed":
    assert keep_large_blocks_off_heap()
big = bytearray(4 << 20)
del big
before = mallinfo().hblkhd
block = bytearray(1 << 20)
print(mallinfo().hblkhd - before)
"""


@glibc
class TestHeap:
    def _mmapped(self, mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True)
        return int(out.stdout)

    def test_fixed_threshold_keeps_a_large_block_off_the_heap(self) -> None:
        """After a 4 MiB block is freed, glibc's default threshold puts a 1 MiB block on the heap (where it
        leaves a hole when freed); with the threshold fixed the block gets its own mapping."""
        assert self._mmapped("default") == 0
        assert self._mmapped("fixed") >= 1 << 20

    def test_trim_answers_whether_pages_went_back(self) -> None:
        """Freed heap pages go back: 12.5 MiB of heap blocks freed below a live block (so free() cannot
        shrink the heap's top itself) is released by malloc_trim."""
        assert ctypes.util.find_library("c")
        blocks = [bytearray(64 << 10) for _ in range(200)]
        pin = bytearray(4096)
        del blocks
        assert trim_heap() is True
        del pin


def test_off_glibc_both_are_no_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the C library has neither call, both answer False instead of raising."""
    import orchestrator.soak.heap as heap

    monkeypatch.setattr(heap, "_libc", False)
    assert keep_large_blocks_off_heap() is False and trim_heap() is False
