"""Each request's latency over its own item's baseline, kept as 10-second block medians for the sampled
trend rule (the `latency_drift` verdict). Pure: no bus, no clock.
"""

from __future__ import annotations

from statistics import median

from orchestrator.soak.samples import SampleSeries

__all__ = ["ItemRatioSeries"]


class ItemRatioSeries:
    """Latency ratios to each item's baseline (%), by request start (wall-clock ns). The judged span starts
    `warmup_s` after the load's first request: `start(ns)` sets that first request, else the first request
    added does. Requests may arrive out of start order by up to a request's latency.

    Dividing by the item's own baseline removes the workload mix (50 ms signal items beside 1-3 s speech items),
    so a change of the mix over the soak is no drift. Bounded by the dataset and the time: one float per item,
    the requests of the items whose baseline is still open (at most `baseline_s` of load), and a SampleSeries of
    10 s blocks.
    """

    def __init__(self, *, warmup_s: float, baseline_s: float) -> None:
        if warmup_s < 0 or baseline_s <= 0:
            raise ValueError(f"ItemRatioSeries needs warmup_s >= 0 and baseline_s > 0 (got {warmup_s}, {baseline_s})")
        self.warmup_ns = int(warmup_s * 1e9)
        self.baseline_ns = int(baseline_s * 1e9)
        self.judged_from_ns: int | None = None
        self.series = SampleSeries()
        self.baselines: dict[str, tuple[float, int]] = {}  # item -> (baseline ms, its span's end)
        self._open: dict[str, tuple[int, list[float]]] = {}  # item -> (its first judged start, latencies)
        self.warmup = 0  # requests before the judged span
        self.baseline_requests = 0  # requests that set a baseline (or came too late to)
        self.unmatched = 0  # requests of an item whose baseline is 0 ms

    def start(self, first_request_ns: int) -> None:
        """The load's first request started at `first_request_ns` (kept if an earlier one is known)."""
        judged_from = first_request_ns + self.warmup_ns
        if self.judged_from_ns is None or judged_from < self.judged_from_ns:
            self.judged_from_ns = judged_from

    @property
    def ratios(self) -> int:
        return self.series.samples

    def add(self, start_ns: int, item_id: str, latency_ms: float) -> None:
        """One successful request of `item_id` that started at `start_ns` and took `latency_ms`.

        An item's baseline is the median latency of its requests that start in its first judged minutes: from its
        first request after the warmup to `baseline_s` later. Those requests set the baseline and are not
        themselves ratios (a request divided by a baseline it helped set reads low, and the step from the
        baseline's own ratios to the later ones would read as drift). Every later request of the item adds
        latency / baseline, in %, at its start time.
        """
        if self.judged_from_ns is None:
            self.start(start_ns)
        assert self.judged_from_ns is not None
        if start_ns < self.judged_from_ns:
            self.warmup += 1
            return
        fixed = self.baselines.get(item_id)
        if fixed is None:
            first, pending = self._open.setdefault(item_id, (start_ns, []))
            if start_ns < first + self.baseline_ns:
                pending.append(latency_ms)
                self.baseline_requests += 1
                return
            fixed = self.baselines[item_id] = (float(median(pending)), first + self.baseline_ns)
            del self._open[item_id]
        elif start_ns < fixed[1]:
            self.baseline_requests += 1  # started in the baseline's span, ended after a later one fixed it
            return
        if fixed[0] <= 0:
            self.unmatched += 1
            return
        self.series.add(start_ns, 100.0 * latency_ms / fixed[0])
