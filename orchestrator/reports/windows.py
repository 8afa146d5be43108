"""Per-window accumulation for reports: request counts by phase and cause, timing arrays thinned to a
bounded number of points, histograms, and AIPerf's own launch/exit times. Pure; fed by reports/fold.py."""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from orchestrator.events import (
    AiperfExited,
    AiperfStarted,
    RequestCorrelated,
    WindowStats,
)
from orchestrator.judge.stats import summarize
from orchestrator.reports.schema import (
    AiperfRun,
    Counts,
    ErrorAnswer,
    Histogram,
    PassRate,
    PhaseCounts,
    Timing,
    WindowSummary,
)

__all__ = ["MAX_POINTS", "HISTOGRAM_BINS", "TIMING_FIELDS", "VERDICTS", "Thinned", "PhaseTally", "WindowTally", "phase_key", "inner_edge", "pass_rate", "histogram", "aiperf_run"]

VERDICTS = ("correct", "wrong", "unparsed", "error", "incomplete")


MAX_POINTS = 1500  # per picture series; enough for a 1000 px wide chart


HISTOGRAM_BINS = 40

MAX_ANSWERS = 5  # distinct error answers kept per phase, cause and HTTP status (every one is counted)
ANSWER_CHARS = 1000
_NOT_KEPT = "(other answers, not kept)"


TIMING_FIELDS = ("request_latency_ms", "client_lifecycle_ms", "handler_ms", "model_call_ms",
                  "worker_roundtrip_ms")  # the RequestCorrelated fields kept per window, in ms


P = TypeVar("P")


class Thinned(Generic[P]):
    """Keeps every `stride`-th point; doubles the stride (dropping every other kept point) when the
    cap is passed. Deterministic, order-preserving, at most `cap` points for any number of adds.
    Callers ask `due()` first so that points that would be dropped are never built."""

    def __init__(self, cap: int = MAX_POINTS) -> None:
        self.cap, self.stride, self.seen = cap, 1, 0
        self.points: list[P] = []

    def due(self) -> bool:
        """Count one point; True when it is to be kept (then pass it to `keep`)."""
        self.seen += 1
        return (self.seen - 1) % self.stride == 0

    def keep(self, point: P) -> None:
        self.points.append(point)
        if len(self.points) > self.cap:
            self.points = self.points[::2]
            self.stride *= 2


def pass_rate(c: Counter[str]) -> PassRate:
    total = sum(c[v] for v in VERDICTS)
    return PassRate(total=total, correct=c["correct"], wrong=c["wrong"], unparsed=c["unparsed"],
                    error=c["error"], rate=c["correct"] / total if total else None, incomplete=c["incomplete"])


def phase_key(ev: RequestCorrelated) -> str:
    """The tally a request counts in: its AIPerf phase, warmup or profiling; anything else is "other"."""
    return ev.phase if ev.phase in ("warmup", "profiling") else "other"


@dataclass
class PhaseTally:
    issued: int = 0
    ok: int = 0
    by_cause: Counter[str] = field(default_factory=Counter)
    by_rule: Counter[str] = field(default_factory=Counter)  # "<cause>/<rule>" where a crash rule decided

    def count(self, ev: RequestCorrelated) -> None:
        """One request of this phase: issued, ok or its cause, and the crash rule that decided it."""
        self.issued += 1
        self.by_cause["ok" if ev.ok else ev.cause] += 1
        if not ev.ok and ev.cause_rule:
            self.by_rule[f"{ev.cause}/{ev.cause_rule}"] += 1
        if ev.ok:
            self.ok += 1

    def frozen(self) -> PhaseCounts:
        errors = self.issued - self.ok
        return PhaseCounts(issued=self.issued, ok=self.ok, errors=errors,
                           by_cause={k: v for k, v in sorted(self.by_cause.items()) if k != "ok"},
                           by_rule=dict(sorted(self.by_rule.items())))


@dataclass
class WindowTally:
    """Running state of one AIPerf window; the value arrays are freed when it closes."""

    name: str
    model: str
    phases: dict[str, PhaseTally] = field(default_factory=dict)
    values: dict[str, array[float]] = field(default_factory=lambda: {f: array("d") for f in TIMING_FIELDS})
    scopes: Counter[str] = field(default_factory=Counter)
    first_start: int | None = None
    last_end: int | None = None
    audio_seconds: float = 0.0
    unmatched: Counter[str] = field(default_factory=Counter)
    balanced: bool | None = None
    problems: list[str] = field(default_factory=list)
    started: AiperfStarted | None = None
    exited: AiperfExited | None = None
    load: Counter[str] = field(default_factory=Counter)
    soak: WindowStats | None = None
    late: int = 0
    timing: Timing | None = None
    histogram: Histogram = field(default_factory=Histogram)
    # (phase, cause, http status) -> answer text -> count; bounded by MAX_ANSWERS texts per key.
    answers: dict[tuple[str, str, int | None], Counter[str]] = field(default_factory=dict)

    def add(self, ev: RequestCorrelated) -> None:
        key = phase_key(ev)
        self._count(ev, key)
        if self.timing is not None:
            self.late += 1  # counted, but the window's percentiles are already final
            return
        if ev.phase == "profiling":
            self._time(ev)

    def _count(self, ev: RequestCorrelated, key: str) -> None:
        """The request in its phase's tally by cause and rule, and a failed one's answer (bounded)."""
        tally = self.phases.get(key)
        if tally is None:
            tally = self.phases[key] = PhaseTally()
        tally.count(ev)
        if not ev.ok and (ev.error_message or ev.http_status is not None):
            said = self.answers.setdefault((key, ev.cause, ev.http_status), Counter())
            text = ev.error_message[:ANSWER_CHARS]
            said[text if text in said or len(said) < MAX_ANSWERS else _NOT_KEPT] += 1

    def _time(self, ev: RequestCorrelated) -> None:
        """A profiling request's span, and an ok one's timings, timing scope and audio seconds."""
        start, end = ev.request_start_ns, ev.request_end_ns
        if start is not None and (self.first_start is None or start < self.first_start):
            self.first_start = start
        if end is not None and (self.last_end is None or end > self.last_end):
            self.last_end = end
        if not ev.ok:
            return
        v = self.values
        # Unrolled over TIMING_FIELDS: this is the per-request hot path. NaN != NaN, so NaN is skipped.
        if (x := ev.request_latency_ms) is not None and x == x:
            v["request_latency_ms"].append(x)
        if (x := ev.client_lifecycle_ms) is not None and x == x:
            v["client_lifecycle_ms"].append(x)
        if (x := ev.handler_ms) is not None and x == x:
            v["handler_ms"].append(x)
        if (x := ev.model_call_ms) is not None and x == x:
            v["model_call_ms"].append(x)
        if (x := ev.worker_roundtrip_ms) is not None and x == x:
            v["worker_roundtrip_ms"].append(x)
        if ev.model_call_ms is not None and ev.timing_scope:
            self.scopes[ev.timing_scope] += 1
        if ev.audio_seconds:
            self.audio_seconds += ev.audio_seconds

    def close(self) -> None:
        """Freeze the timing and the histogram, then drop the values (idempotent)."""
        if self.timing is not None:
            return
        summaries = {name: summarize(self.values[name]) for name in TIMING_FIELDS}
        prof = self.phases.get("profiling", PhaseTally())
        span = (self.last_end - self.first_start) / 1e9 if self.first_start and self.last_end else None
        span = span if span and span > 0 else None
        self.timing = Timing(
            **summaries,
            timing_scope=self.scopes.most_common(1)[0][0] if self.scopes else "",
            span_s=span,
            requests_per_s=prof.ok / span if span else None,
            audio_seconds=self.audio_seconds,
            audio_seconds_per_s=self.audio_seconds / span if span else None,
        )
        self.histogram = histogram({
            "client request_latency": self.values["request_latency_ms"],
            "server handler": self.values["handler_ms"],
            "server model_call": self.values["model_call_ms"],
        })
        self.values = {}

    def summary(self) -> WindowSummary:
        self.close()
        assert self.timing is not None
        return WindowSummary(
            window=self.name, model=self.model, aiperf=aiperf_run(self.name, self.started, self.exited),
            counts=self.counts(), timing=self.timing, load_correctness=pass_rate(self.load),
            first_start_unix_ns=self.first_start, last_end_unix_ns=self.last_end, soak=self.soak,
        )

    def counts(self) -> Counts:
        empty = PhaseTally()
        return Counts(
            warmup=self.phases.get("warmup", empty).frozen(),
            profiling=self.phases.get("profiling", empty).frozen(),
            other=self.phases.get("other", empty).frozen(),
            unmatched=dict(sorted(self.unmatched.items())),
            accounting_balanced=self.balanced,
            accounting_problems=list(self.problems),
            late_events=self.late,
            error_answers=[ErrorAnswer(phase=phase, cause=cause, http_status=status, count=n, message=text)
                           for (phase, cause, status), said in self.answers.items() for text, n in said.most_common()],
        )


def inner_edge(edge: float) -> float:
    """An inner bin edge to 12 significant digits: numpy releases differ in geomspace's last bit (2.4 moved
    two edges of a fixture report by one ulp), which must not change a report rebuilt from the same journal."""
    return float(f"{edge:.12g}")


def histogram(series: dict[str, array[float]]) -> Histogram:
    """Shared bins over every series: log-spaced when the range spans more than 4x, else linear."""
    present = {k: np.frombuffer(v, dtype=np.float64) for k, v in series.items() if len(v)}
    if not present:
        return Histogram()
    lo = float(min(v.min() for v in present.values()))
    hi = float(max(v.max() for v in present.values()))
    if hi <= lo:
        hi = lo + 1.0
    if lo > 0 and hi / lo > 4:
        edges = np.geomspace(lo, hi, HISTOGRAM_BINS + 1)
    else:
        edges = np.linspace(lo, hi, HISTOGRAM_BINS + 1)
    edges = np.array([lo, *(inner_edge(float(e)) for e in edges[1:-1]), hi])  # exact ends: the outermost values fall inside
    counts = {name: [int(c) for c in np.histogram(values, bins=edges)[0]] for name, values in present.items()}
    return Histogram(edges_ms=[float(e) for e in edges], counts=counts)


def aiperf_run(window: str, started: AiperfStarted | None, exited: AiperfExited | None) -> AiperfRun | None:
    if started is None and exited is None:
        return None
    return AiperfRun(
        window=window,
        command=started.shell if started else "",
        version=started.version if started else "",
        fingerprint=started.fingerprint if started else "",
        artifact_dir=started.artifact_dir if started else "",
        classification=exited.classification if exited else "",
        returncode=exited.returncode if exited else None,
        reason=exited.reason if exited else "",
        duration_s=exited.duration_ns / 1e9 if exited and exited.duration_ns else None,
    )
