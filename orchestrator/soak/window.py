"""One soak window's aggregates, built from its events in bounded memory and frozen at close. Pure: no bus,
no clock, no I/O."""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from collections.abc import Sequence

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import MemorySummary, WindowStats
from orchestrator.judge.gates import ScoredAnswer, evaluate_gates
from orchestrator.judge.stats import summarize

__all__ = ["MemorySummary", "WindowStats", "WindowAccumulator", "window_name", "WINDOW_PREFIX", "total_requests"]


WINDOW_PREFIX = "soak/w"


def window_name(index: int) -> str:
    """`soak/w0001` for index 1: windows sort by name in journal and folder listings."""
    return f"{WINDOW_PREFIX}{index:04d}"


def _span_s(start_ns: int | None, end_ns: int | None) -> float | None:
    return (end_ns - start_ns) / 1e9 if start_ns is not None and end_ns is not None else None


def _memory(values: array[float]) -> MemorySummary:
    if not values:
        return MemorySummary()
    ordered = sorted(values)
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return MemorySummary(samples=n, start_bytes=int(values[0]), end_bytes=int(values[-1]),
                         peak_bytes=int(ordered[-1]), median_bytes=float(median))


def _item_medians(per_item: dict[str, array[float]]) -> dict[str, float]:
    out = {}
    for item, values in sorted(per_item.items()):
        ordered = sorted(values)
        n = len(ordered)
        # Interned: every kept window's dict shares one key object per item (the ids arrive as new strings
        # with each request), so a soak keeps a window's medians in about half the memory.
        out[sys.intern(item)] = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return out


# Values are held as compact arrays only until the window closes; a closed window is a small `WindowStats`
# (what SoakWindowClosed.summary carries), so a soak's memory grows with its number of windows, never with
# its number of requests.
class WindowAccumulator:
    """Running state of one window. Feed it, then `close()` once; the arrays are dropped on close."""

    def __init__(self, index: int, start_unix_ns: int, *, criteria: CorrectnessCriteria, segment: int = 0) -> None:
        self.index = index
        self.segment = segment
        self.window = window_name(index)
        self.start_unix_ns = start_unix_ns
        self.criteria = criteria
        self._client = array("d")
        self._server = array("d")
        self._model_call = array("d")
        self._rss = array("d")
        self._gpu = array("d")
        self._own = array("d")
        self._aiperf = array("d")
        self._item_server: dict[str, array[float]] = {}
        self._item_client: dict[str, array[float]] = {}
        self._answers: list[ScoredAnswer] = []
        self.by_cause: Counter[str] = Counter()
        self.verdicts: Counter[str] = Counter()
        self.issued = 0
        self.ok = 0
        self.warmup_issued = 0
        self.restarts = 0
        self.unexpected_exits = 0
        self.incarnations: set[int] = set()
        self.first_start_ns: int | None = None
        self.last_end_ns: int | None = None
        # Any phase (warmup included): AIPerf's start-up ends at its first request of whatever phase.
        self.first_request_ns: int | None = None
        self.last_request_ns: int | None = None

    def add_request(self, *, phase: str, ok: bool, cause: str, request_latency_ms: float | None,
                    handler_ms: float | None, model_call_ms: float | None, request_start_ns: int | None,
                    request_end_ns: int | None, incarnation: int = 0, item_id: str = "") -> None:
        """One correlated request; only the profiling phase counts toward the window's statistics."""
        if request_start_ns and (self.first_request_ns is None or request_start_ns < self.first_request_ns):
            self.first_request_ns = request_start_ns
        if request_end_ns and (self.last_request_ns is None or request_end_ns > self.last_request_ns):
            self.last_request_ns = request_end_ns
        if phase != "profiling":
            self.warmup_issued += phase == "warmup"
            return
        self.issued += 1
        if incarnation:
            self.incarnations.add(incarnation)
        if request_start_ns:
            self.first_start_ns = request_start_ns if self.first_start_ns is None else min(self.first_start_ns,
                                                                                           request_start_ns)
        if request_end_ns:
            self.last_end_ns = request_end_ns if self.last_end_ns is None else max(self.last_end_ns, request_end_ns)
        if not ok:
            self.by_cause[cause] += 1
            return
        self.ok += 1
        for target, value in ((self._client, request_latency_ms), (self._server, handler_ms),
                              (self._model_call, model_call_ms)):
            if value is not None and value == value:
                target.append(value)
        if item_id:
            for per_item, value in ((self._item_server, handler_ms), (self._item_client, request_latency_ms)):
                if value is not None and not math.isnan(value):
                    per_item.setdefault(item_id, array("d")).append(value)

    def add_verdict(self, answer: ScoredAnswer) -> None:
        """One scored profiling answer (the dataset's verdict for what the server said under load)."""
        self._answers.append(answer)
        self.verdicts[answer.verdict] += 1

    def add_resource(self, rss_bytes: int, gpu_memory_bytes: int | None) -> None:
        self._rss.append(float(rss_bytes))
        if gpu_memory_bytes is not None:
            self._gpu.append(float(gpu_memory_bytes))

    def add_process(self, role: str, rss_bytes: int) -> None:
        """One sample of an observer-side process tree (`orchestrator` or `aiperf`)."""
        (self._own if role == "orchestrator" else self._aiperf).append(float(rss_bytes))

    def add_restart(self) -> None:
        self.restarts += 1

    def add_unexpected_exit(self) -> None:
        self.unexpected_exits += 1

    def close(self, end_unix_ns: int, *, aiperf_classification: str = "", accounting_balanced: bool | None = None,
              gap_before_s: float | None = None, aiperf_launch_unix_ns: int | None = None,
              aiperf_exit_unix_ns: int | None = None) -> WindowStats:
        """Freeze the window: exact percentiles and gates over its values, then free them."""
        gates = evaluate_gates(self.criteria, self._answers) if self._answers else []
        judged = [g for g in gates if g.total]
        errors = self.issued - self.ok
        span_ns = (self.last_end_ns - self.first_start_ns) if self.first_start_ns and self.last_end_ns else 0
        stats = WindowStats(
            window=self.window, index=self.index, start_unix_ns=self.start_unix_ns, end_unix_ns=end_unix_ns,
            issued=self.issued, ok=self.ok, errors=errors, by_cause=dict(sorted(self.by_cause.items())),
            warmup_issued=self.warmup_issued, error_rate=errors / self.issued if self.issued else None,
            throughput_rps=self.ok / (span_ns / 1e9) if span_ns > 0 else None,
            client_latency_ms=summarize(self._client), server_latency_ms=summarize(self._server),
            model_call_ms=summarize(self._model_call),
            correct=self.verdicts["correct"], scored=len(self._answers), verdicts=dict(sorted(self.verdicts.items())),
            gates=gates,
            # A gate over zero answers of its scope says nothing about this window (None, not failed).
            correctness_passed=all(g.passed for g in judged) if judged else None,
            rss=_memory(self._rss), gpu_memory=_memory(self._gpu), restarts=self.restarts,
            unexpected_exits=self.unexpected_exits, incarnations=sorted(self.incarnations),
            aiperf_classification=aiperf_classification, accounting_balanced=accounting_balanced,
            gap_before_s=gap_before_s, aiperf_launch_unix_ns=aiperf_launch_unix_ns,
            first_request_unix_ns=self.first_request_ns, last_request_unix_ns=self.last_request_ns,
            aiperf_exit_unix_ns=aiperf_exit_unix_ns, orchestrator_rss=_memory(self._own),
            aiperf_rss=_memory(self._aiperf), segment=self.segment,
            item_server_ms=_item_medians(self._item_server), item_client_ms=_item_medians(self._item_client),
        )
        self._client = self._server = self._model_call = self._rss = self._gpu = array("d")
        self._own = self._aiperf = array("d")
        self._item_server, self._item_client = {}, {}
        self._answers = []
        return stats


def total_requests(windows: Sequence[WindowStats]) -> tuple[int, int]:
    """(ok, errors) over all windows."""
    return sum(w.ok for w in windows), sum(w.errors for w in windows)
