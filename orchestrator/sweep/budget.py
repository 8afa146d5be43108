"""What fits in a sweep's --max-duration: the time left, and the leading loads whose planned times fit in it."""

from __future__ import annotations

import time
from collections.abc import Sequence

__all__ = ["EXIT_S", "START_S", "Budget"]

# AIPerf's start-up and exit beside a batch's planned requests: at least this, else what the last batch took
# beyond its points' requests (11-15 s per AIPerf process on a loaded 2-core machine since --prompt-corpus
# random; 14-50 s before).
# A point cut short by the sweep's time would lose its requests in flight, so one that cannot finish is not started.
# An open-loop load's planned time is its schedule, (warmup + profiling requests) / rate; a closed-loop load's, the
# last batch's time per load. Each AIPerf process costs its start-up and exit beside them.
START_S = 10.0
# A gated or held load runs only where its planned time and AIPerf's exit after it fit in the time left.
EXIT_S = 2.0


class Budget:
    """The sweep's time: `max_duration_s` from `started` (time.monotonic()), None for no limit."""

    def __init__(self, *, mode: str, points: Sequence[float], per: int, max_duration_s: float | None,
                 started: float) -> None:
        self.mode, self.points, self.per = mode, list(points), per
        self.max_duration_s, self.started = max_duration_s, started
        self.overhead_s = START_S
        self.point_s = 0.0  # closed loop: the last batch's time per load (0 before any)
        self.base_s: float | None = None  # the baseline window's planned seconds, once the plan is stated

    def left_s(self) -> float:
        if not self.max_duration_s:
            return float("inf")
        return self.max_duration_s - (time.monotonic() - self.started)

    def fit(self, values: list[float], *, base: bool) -> list[float]:
        """The leading values whose planned time, with one AIPerf start-up (and the baseline window first when
        `base`), fits in the sweep's time left."""
        # The baseline (concurrency 1) takes per x its latency: as planned once the plan is stated; before, a
        # server whose latency exceeds the gap of the lowest rate cannot hold that rate anyway, so that gap bounds it
        # where the sweep can find a capacity.
        base_s = 0.0
        if base and self.mode == "rate":
            base_s = self.base_s if self.base_s is not None else self.per / min(self.points)
        return self._leading(values, self.overhead_s + base_s)

    def fit_held(self, values: list[float], *, base: bool, base_s: float | None) -> int:
        """How many of the held first batch's loads (the baseline first when `base`, then `values`) to run: the
        leading ones whose planned time and AIPerf's exit still fit in the time left (AIPerf has started)."""
        start = EXIT_S + ((base_s or 0.0) if base else 0.0)
        n = len(self._leading(values, start)) if start <= self.left_s() else 0
        return n + base if n else 0

    def after_grid_s(self, base_s: float | None) -> float | None:
        """What the sweep's time left now leaves to narrow the capacity's interval once the baseline window (its
        planned `base_s`), the grid's planned points and one more AIPerf start-up have run (closed loop: the
        points unplanned, not counted); None without --max-duration."""
        if not self.max_duration_s:
            return None
        grid = sum(self.per / v for v in self.points) if self.mode == "rate" else 0.0
        return self.left_s() - (base_s or 0.0) - grid - START_S

    def need_s(self, value: float, pace_s: float) -> float:
        """A gated load's planned time and AIPerf's exit after it; closed loop: `pace_s`, the batch's own pace so
        far, or the last batch's where slower."""
        return (self.per / value if self.mode == "rate" else max(self.point_s, pace_s)) + EXIT_S

    def spent(self, elapsed_s: float, sending_s: float, loads: int) -> None:
        """A batch took `elapsed_s`, `sending_s` of it its loads' requests: what its AIPerf process cost beyond
        them, and its time per load, plan the next."""
        self.overhead_s = max(START_S, elapsed_s - sending_s)
        self.point_s = max(0.0, elapsed_s - self.overhead_s) / max(1, loads)

    def _leading(self, values: list[float], start_s: float) -> list[float]:
        """The leading values whose planned times, after `start_s`, fit in the time left."""
        total, out = start_s, []
        for value in values:
            total += self.per / value if self.mode == "rate" else self.point_s
            if total > self.left_s():
                break
            out.append(value)
        return out
