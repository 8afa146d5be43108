"""Every memory sample of a soak, kept as 10-second block medians for the sampled trend rule.
Bounded by time, not requests: an 8-hour soak keeps 2,880 blocks per series (two floats each). A block's
median drops a single-sample spike; the trend rule averages blocks into batches. Pure: no bus, no clock."""

from __future__ import annotations

from array import array
from statistics import median

__all__ = ["BLOCK_S", "SampleSeries"]

BLOCK_S = 10.0
_NS = 1e9


class SampleSeries:
    """One series' samples (wall-clock ns, value): closed blocks of `block_s` at their mean time, and the
    block being filled. Samples must arrive in time order (a late one joins the current block)."""

    def __init__(self, block_s: float = BLOCK_S) -> None:
        self.block_s = block_s
        self.samples = 0
        self._times = array("d")  # closed blocks: mean time (s since the epoch)
        self._values = array("d")  # closed blocks: median value
        self._counts = array("l")
        self._block: list[float] = []
        self._block_times: list[float] = []
        self._block_index: int | None = None

    def add(self, unix_ns: int, value: float) -> None:
        t = unix_ns / _NS
        index = int(t // self.block_s)
        if self._block_index is not None and index > self._block_index:
            self._close_block()
        if self._block_index is None or index > self._block_index:
            self._block_index = index
        self._block.append(value)
        self._block_times.append(t)
        self.samples += 1

    def _close_block(self) -> None:
        if self._block:
            self._times.append(sum(self._block_times) / len(self._block_times))
            self._values.append(median(self._block))
            self._counts.append(len(self._block))
        self._block, self._block_times = [], []

    def between(self, start_ns: int, end_ns: int) -> tuple[list[float], list[float], int]:
        """(block times in s since the epoch, block medians, samples) of the blocks whose mean time lies in
        [start_ns, end_ns], the block being filled included."""
        lo, hi = start_ns / _NS, end_ns / _NS
        times, values, n = [], [], 0
        pending = ([sum(self._block_times) / len(self._block_times)], [median(self._block)], [len(self._block)]) \
            if self._block else ([], [], [])
        for t, v, c in zip([*self._times, *pending[0]], [*self._values, *pending[1]],
                           [*self._counts, *pending[2]], strict=True):
            if lo <= t <= hi:
                times.append(t)
                values.append(v)
                n += c
        return times, values, n
