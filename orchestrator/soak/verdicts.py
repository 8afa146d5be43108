"""Soak verdicts: each series of the evidence put to its rule (orchestrator.judge holds the rules), with one of
three outcomes and the numbers. No I/O, no clock; `fit_trend` (the former least-squares rule) stays for benchmarks."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from fractions import Fraction
from statistics import median
from typing import TypeVar

import msgspec

from orchestrator.base.figures import figure
from orchestrator.events import (
    AiperfGeneration,
    AiperfRunFact,
    CorrectnessDetail,
    DriftDetail,
    ErrorRateDetail,
    MemoryDetail,
    MemorySummary,
    PooledGate,
    ProcessCheck,
    SampledDriftDetail,
    SampledMemoryDetail,
    ServerExitFact,
    SoakLimits,
    TailDetail,
    WindowCorrectness,
    WindowStats,
)
from orchestrator.judge.generations import Generation, GenerationRule, judge_generations
from orchestrator.judge.intervals import wilson_interval
from orchestrator.judge.latency import judge_item_drift, min_tail_samples
from orchestrator.judge.memory import MemoryRule, MemoryVerdict, judge_memory_medians
from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS, Outcome
from orchestrator.judge.sampled_trend import SampledTrend, SampledTrendRule, estimate_wander, judge_sampled_trend
from orchestrator.judge.trend import TrendRule, TrendVerdict, judge_relative_trend
from orchestrator.reports.text import gate_pct
from orchestrator.soak.evidence import FirstPass, SoakEvidence
from orchestrator.soak.load_coverage import GapAllowance, accounting, window_gaps
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.ratios import ItemRatioSeries
from orchestrator.soak.samples import SampleSeries
from orchestrator.soak.supervision import judge_processes, judge_restarts

__all__ = ["SoakLimits", "Trend", "ServerExitFact", "ProcessCheck", "AiperfRunFact", "FirstPass", "SoakEvidence",
           "trend_rule", "memory_rule", "sampled_rule", "drift_rule", "fit_trend", "judge_soak"]

_MIB = 2.0**20
_NS_PER_H = 3600e9


def trend_rule(limits: SoakLimits) -> TrendRule:
    """The trend rule's minimum evidence and confidence, as `[soak]` sets them."""
    return TrendRule(min_windows=limits.min_trend_windows, min_span_s=limits.min_trend_span_s,
                     confidence=limits.trend_confidence)


def memory_rule(limits: SoakLimits) -> MemoryRule:
    """The memory rule's limits, as `[soak]` sets them."""
    return MemoryRule(limit_mib_per_h=limits.rss_limit_mib_per_h, growth_limit_mib=limits.rss_growth_limit_mib,
                      trend=trend_rule(limits))


def sampled_rule(limits: SoakLimits) -> SampledTrendRule:
    """The sampled memory rule's limits and evidence, as `[soak]` sets them."""
    return SampledTrendRule(limit_per_h=limits.rss_limit_mib_per_h, growth_limit=limits.rss_growth_limit_mib,
                            min_span_s=limits.min_trend_span_s, confidence=limits.trend_confidence,
                            wander=limits.rss_wander_mib)


def generation_rule(limits: SoakLimits) -> GenerationRule:
    """The per-generation rule for AIPerf's memory after a handover, as `[soak]` sets it."""
    return GenerationRule(limit_per_h=limits.rss_limit_mib_per_h, growth_limit=limits.rss_growth_limit_mib,
                          min_span_s=limits.min_trend_span_s, confidence=limits.trend_confidence,
                          wander=limits.rss_wander_mib)


# The time scale of latency's wander on a shared host (load that moves latency for minutes): the drift
# rule's wander floor is the level sd the ratios themselves show between segments this long.
LATENCY_WANDER_S = 300.0


def drift_rule(limits: SoakLimits, wander_pct: float = 0.0, wander_s: float = LATENCY_WANDER_S) -> SampledTrendRule:
    """The same-item latency drift rule: the sampled trend rule in % of baseline per hour with no growth cap
    (a drift decides by its slope alone, over `min_trend_span_s` or more), and a wander floor of `wander_pct`
    per `wander_s`, which the soak estimates from the ratios themselves (judge.sampled_trend.estimate_wander)."""
    return SampledTrendRule(limit_per_h=limits.p99_latency_limit_pct_per_h, growth_limit=math.inf,
                            min_span_s=limits.min_trend_span_s, confidence=limits.trend_confidence,
                            wander=wander_pct, wander_s=wander_s)


class Trend(msgspec.Struct, frozen=True, kw_only=True):
    """A series' drift per hour two ways: least-squares slope, and growth between the medians of its
    first and last `k` points (k = n // 3, at least 1) divided by the time between them."""

    n: int
    k: int
    slope_per_h: float
    growth_per_h: float
    first_median: float
    last_median: float
    span_h: float


def fit_trend(times_h: Sequence[float], values: Sequence[float]) -> Trend:
    """Slope and median growth of `values` over `times_h` (hours). Needs at least two distinct times."""
    n = len(values)
    if n != len(times_h) or n < 2:
        raise ValueError(f"fit_trend needs two or more (time, value) pairs, got {n}")
    mt = math.fsum(times_h) / n
    mv = math.fsum(values) / n
    sxx = math.fsum((t - mt) ** 2 for t in times_h)
    if sxx <= 0:
        raise ValueError("fit_trend needs at least two distinct times")
    slope = math.fsum((t - mt) * (v - mv) for t, v in zip(times_h, values, strict=True)) / sxx
    k = max(1, n // 3)
    first_t, last_t = median(times_h[:k]), median(times_h[-k:])
    first_v, last_v = median(values[:k]), median(values[-k:])
    span = last_t - first_t
    growth = (last_v - first_v) / span if span > 0 else 0.0
    return Trend(n=n, k=k, slope_per_h=slope, growth_per_h=growth, first_median=first_v, last_median=last_v,
                 span_h=times_h[-1] - times_h[0])


def _mid_h(w: WindowStats, origin_ns: int) -> float:
    return ((w.start_unix_ns + w.end_unix_ns) / 2 - origin_ns) / _NS_PER_H


def _round(values: Sequence[float | None]) -> list[float | None]:
    return [None if v is None else round(v, 6) for v in values]


def _bounds(interval: tuple[float, float] | None) -> list[float] | None:
    """An interval as journaled: None where it has an open end (-inf or inf: too few points for one), since
    JSON has no infinity and msgspec writes one as null, which the journal's list of floats cannot read back."""
    return list(interval) if interval and all(math.isfinite(b) for b in interval) else None


def _finite(value: float | None) -> float | None:
    """A figure as journaled: None where it is infinite (no slope would FAIL), for the same reason as _bounds."""
    return value if value is not None and math.isfinite(value) else None


_D = TypeVar("_D", MemoryDetail, DriftDetail, TailDetail)


def _with_trend(detail: _D, t: TrendVerdict) -> _D:
    """`detail` with the trend rule's numbers (TrendNumbers' fields)."""
    return msgspec.structs.replace(detail, slope=t.slope_per_h,
                                   interval=_bounds(t.interval_per_h),
                                   limit=t.limit_per_h, unit=t.unit, n=t.n_windows, span_s=t.span_s,
                                   confidence=t.confidence, method=t.method)


def _memory(metric: str, windows: Sequence[WindowStats], pick: Callable[[WindowStats], MemorySummary],
            limits: SoakLimits, skipped: int, source: str) -> MetricVerdict:
    """The memory rule (judge.memory) on the per-window median of one process tree's samples (MiB)."""
    pairs = [(w, m.median_bytes / _MIB) for w in windows if (m := pick(w)).median_bytes is not None]
    base = MemoryDetail(source=source, warmup_windows_discarded=skipped, windows=[w.window for w, _ in pairs],
                        series=_round([v for _, v in pairs]))
    if not pairs:
        return MetricVerdict(metric=metric, outcome=INCONCLUSIVE, detail=base,
                             reason=f"no sample in the {len(windows)} window(s) after discarding {skipped} "
                                    f"warmup window(s)")
    origin = pairs[0][0].start_unix_ns
    times = [_mid_h(w, origin) for w, _ in pairs]
    v: MemoryVerdict = judge_memory_medians(times, [m for _, m in pairs], memory_rule(limits))
    detail = msgspec.structs.replace(_with_trend(base, v.trend), growth_mib=v.growth_mib,
                                     growth_limit_mib=v.growth_limit_mib, times_h=[round(t, 6) for t in times])
    return MetricVerdict(metric=metric, outcome=v.outcome, reason=v.reason, detail=detail)


def _sampled_memory(metric: str, series: SampleSeries | None, limits: SoakLimits, span_ns: tuple[int, int],
                    source: str, first_pass: FirstPass | None = None) -> MetricVerdict:
    """The sampled trend rule (judge.sampled_trend) on every sample of `series` in the judged span: from
    `warmup_s` after the load's start to its end. With `first_pass`, the span is cut where the load's first
    pass over its input ended: a process may step up while it first sees the items, so before that cut
    only growth beyond the cap FAILs (the slope limit does not apply), and the full rule judges after it."""
    start_ns = span_ns[0] + int(limits.warmup_s * 1e9)
    rule = sampled_rule(limits)
    cut_ns = None if first_pass is None else min(span_ns[1], first_pass.end_ns or span_ns[1])
    steady_ns = start_ns if cut_ns is None else max(start_ns, cut_ns)
    times, values, samples = series.between(steady_ns, span_ns[1]) if series else ([], [], 0)
    v = judge_sampled_trend(times, values, rule)
    first = whole = None
    if first_pass is not None and cut_ns is not None and cut_ns > start_ns:
        growth_only = msgspec.structs.replace(rule, limit_per_h=math.inf)
        ft, fv, fn = series.between(start_ns, cut_ns) if series else ([], [], 0)
        first = judge_sampled_trend(ft, fv, growth_only)
        samples += fn
        # The cap holds over the whole judged span, however the cut splits it: a leak that spans the cut is
        # judged on all its samples, not on two short halves.
        wt, wv, _wn = series.between(start_ns, span_ns[1]) if series else ([], [], 0)
        whole = judge_sampled_trend(wt, wv, growth_only)
    decided = next((x for x in (first, whole) if x is not None and x.outcome == FAIL), v)
    detail = SampledMemoryDetail(
        source=source, warmup_s=limits.warmup_s, samples=samples, batch_times_h=decided.batch_times_h,
        series=decided.batch_values, growth_mib=decided.growth, level_rise_mib=decided.level_rise,
        level_rise_interval=_bounds(decided.level_interval),
        growth_interval=_bounds(decided.growth_interval),
        growth_limit_mib=rule.growth_limit, detectable_slope=_finite(v.detectable_per_h), wander_mib=rule.wander,
        slope=decided.slope_per_h, interval=_bounds(decided.interval_per_h),
        limit=rule.limit_per_h, unit="MiB/h", n=len(decided.batch_values), span_s=decided.span_s,
        confidence=v.confidence, method=v.method,
        first_pass_requests=first_pass.requests if first_pass else 0,
        first_pass_end_s=(cut_ns - start_ns) / 1e9 if cut_ns is not None and first_pass and first_pass.end_ns else None,
        first_pass_growth_mib=first.growth if first else None,
        first_pass_growth_interval=_bounds(first.growth_interval) if first else None)
    outcome, reason = v.outcome, v.reason
    if not samples:
        return MetricVerdict(metric=metric, outcome=INCONCLUSIVE, detail=detail,
                             reason=f"no sample in the judged span (after the {limits.warmup_s:g} s warmup)")
    if first_pass is not None:
        outcome, reason = _first_pass_outcome(v, first, first_pass, rule.growth_limit)
        if outcome != FAIL and whole is not None and whole.outcome == FAIL and whole.growth_interval is not None:
            outcome, reason = FAIL, (f"grows beyond the cap over the judged span: {_beyond_cap(whole, rule.growth_limit)} over "
                                     f"{whole.span_s / 60:.1f} judged min, wholly above the {rule.growth_limit:g} MiB cap")
    return MetricVerdict(metric=metric, outcome=outcome, reason=reason, detail=detail)


def _aiperf_generations(generations: Sequence[Generation], limits: SoakLimits, origin_s: float,
                        source: str) -> MetricVerdict:
    """aiperf_rss after a handover: judged per AIPerf process generation (judge.generations), each from its
    first request; the soak's warmup does not apply (each process's own settle does)."""
    rule = generation_rule(limits)
    v = judge_generations(generations, rule)
    detail = SampledMemoryDetail(
        source=f"{source}, judged per AIPerf process generation ({len(generations)} processes)",
        warmup_s=rule.settle_s, samples=sum(len(g.times_s) for g in generations), growth_mib=v.growth,
        growth_interval=_bounds(v.growth_interval), growth_limit_mib=rule.growth_limit,
        detectable_slope=_finite(v.detectable_per_h), wander_mib=rule.wander, slope=v.slope_per_h,
        interval=_bounds(v.interval_per_h), limit=rule.limit_per_h, unit="MiB/h",
        n=v.successors, span_s=v.span_s, confidence=v.confidence, method=v.method,
        generations=[AiperfGeneration(pid=g.pid, start_s=round(g.start_s - origin_s, 3),
                                      level_mib=None if g.level is None else round(g.level, 3),
                                      peak_growth_mib=None if g.peak_growth is None else round(g.peak_growth, 3),
                                      outcome=g.outcome, points=g.points, requests=g.requests)
                     for g in v.generations])
    return MetricVerdict(metric="aiperf_rss", outcome=v.outcome, reason=v.reason, detail=detail)


_BEYOND_CAP = "grows beyond the cap"  # how every memory FAIL by the growth cap begins (judge.sampled_trend)


def _beyond_cap(t: SampledTrend, cap: float) -> str:
    """The figure whose interval put a span beyond the cap: its growth (slope x span) where that did, else
    its level rise from the first batch to the last (a one-time step near an end of the span)."""
    lo, hi = t.growth_interval or (math.nan, math.nan)
    if lo > cap or t.level_interval is None or t.level_rise is None:
        return f"growth {figure(t.growth, signed=True)} MiB [{figure(lo, signed=True)}, {figure(hi, signed=True)}]"
    lo, hi = t.level_interval
    return f"level rise from the first batch to the last {figure(t.level_rise, signed=True)} MiB [{figure(lo, signed=True)}, {figure(hi, signed=True)}]"


def _first_pass_outcome(v: SampledTrend, first: SampledTrend | None, first_pass: FirstPass,
                        cap: float) -> tuple[Outcome, str]:
    """The verdict of a span cut at the end of the first pass: growth beyond the cap in the first pass FAILs;
    otherwise the span after it decides (nothing while the pass goes on)."""
    rows = f"the first pass over the input ({first_pass.requests} requests)"
    so_far = ""
    if first is not None and first.growth is not None and first.growth_interval is not None:
        lo, hi = first.growth_interval
        so_far = (f"growth {figure(first.growth, signed=True)} MiB [{figure(lo, signed=True)}, {figure(hi, signed=True)}] over its {first.span_s / 60:.1f} judged min "
                  f"(cap {cap:g} MiB)")
        if first.outcome == FAIL:
            return FAIL, (f"grows beyond the cap during {rows}: {_beyond_cap(first, cap)} over its {first.span_s / 60:.1f} "
                          f"judged min, wholly above the {cap:g} MiB cap")
    if first_pass.end_ns is None:
        return INCONCLUSIVE, (f"{rows} is not over: the slope is judged after it, and until then only growth "
                              f"beyond the {cap:g} MiB cap can FAIL" + (f"; so far {so_far}" if so_far else ""))
    during = f"; during it, {so_far}" if so_far else ""
    if v.outcome == FAIL and v.reason.startswith(_BEYOND_CAP):  # a FAIL by the cap says so first, wherever it grew
        return FAIL, f"{_BEYOND_CAP} after {rows}{v.reason.removeprefix(_BEYOND_CAP)}{during}"
    return v.outcome, f"after {rows}: {v.reason}{during}"


def _sampled_drift(ratios: Mapping[str, ItemRatioSeries], limits: SoakLimits, end_ns: int) -> MetricVerdict:
    """The sampled trend rule on every request's ratio to its own item's baseline, server timing where the
    server reported it, else the client's."""
    kind = "server" if (s := ratios.get("server")) is not None and (s.ratios or s.baselines) else "client"
    series = ratios.get(kind)
    source = ("server handler_ms" if kind == "server" else "client request latency (the server reported no "
              "timing)") + " of each request over its own item's baseline, in %, 10 s block medians"
    times, values, n = ([], [], 0) if series is None or series.judged_from_ns is None else \
        series.series.between(series.judged_from_ns, end_ns)
    rule = drift_rule(limits, *estimate_wander(times, values, LATENCY_WANDER_S))
    v = judge_sampled_trend(times, values, rule, unit="%")
    detail = SampledDriftDetail(
        source=source, warmup_s=limits.warmup_s, baseline_s=limits.latency_baseline_s,
        baseline_items=len(series.baselines) if series else 0,
        baseline_requests=series.baseline_requests if series else 0, ratios=n, batch_times_h=v.batch_times_h,
        series=v.batch_values, detectable_slope=_finite(v.detectable_per_h), slope=v.slope_per_h,
        interval=_bounds(v.interval_per_h), limit=rule.limit_per_h, unit="%/h",
        n=len(v.batch_values), span_s=v.span_s, confidence=v.confidence, method=v.method,
        wander_pct=rule.wander, wander_s=rule.wander_s)
    items = len(series.baselines) if series else 0
    reason = (f"each request over its own item's baseline ({items} items, baseline over each item's first "
              f"{limits.latency_baseline_s:g} s after the {limits.warmup_s:g} s warmup; wander floor "
              f"{figure(rule.wander)} % per {rule.wander_s:g} s, from the ratios): {v.reason}") if n else \
        (f"no ratio yet: an item's requests are ratios once its baseline ({limits.latency_baseline_s:g} s after its "
         f"first request past the {limits.warmup_s:g} s warmup) is set")
    return MetricVerdict(metric="latency_drift", outcome=v.outcome if n else INCONCLUSIVE, reason=reason,
                         detail=detail)


def _server_timed(windows: Sequence[WindowStats]) -> bool:
    return any(w.server_latency_ms.count for w in windows)


def _item_drift(windows: Sequence[WindowStats], limits: SoakLimits, skipped: int) -> MetricVerdict:
    """Latency on the same items: each item's window median over its own baseline (judge.latency)."""
    server = any(w.item_server_ms for w in windows)
    per_window = [list((w.item_server_ms if server else w.item_client_ms).items()) for w in windows]
    source = ("server handler_ms" if server else "client request latency (the server reported no timing)") + \
        ", each item's median per window over its median in the first judged windows"
    base = DriftDetail(source=source, warmup_windows_discarded=skipped, windows=[w.window for w in windows])
    if not windows:
        return MetricVerdict(metric="latency_drift", outcome=INCONCLUSIVE, detail=base,
                             reason=f"no window after discarding {skipped} warmup window(s)")
    origin = windows[0].start_unix_ns
    times = [_mid_h(w, origin) for w in windows]
    drift = judge_item_drift(times, per_window, limits.p99_latency_limit_pct_per_h,
                             baseline_windows=limits.latency_baseline_windows, rule=trend_rule(limits))
    trend, ratios = drift.trend, drift.ratios
    detail = msgspec.structs.replace(
        _with_trend(base, trend), series=_round([None if m is None else 100.0 * m for m in ratios.medians]),
        times_h=[round(t, 6) for t in times], baseline_items=ratios.baseline_items, baseline_windows=ratios.baseline_windows,
        counted=list(ratios.counted))
    return MetricVerdict(metric="latency_drift", outcome=trend.outcome, reason=drift.reason, detail=detail)


def _tail(windows: Sequence[WindowStats], limits: SoakLimits, skipped: int, q: float = 0.99) -> MetricVerdict:
    """The p99 per window, judged only where every window holds enough samples (judge.latency's rule)."""
    server = _server_timed(windows)
    summaries = [w.server_latency_ms if server else w.client_latency_ms for w in windows]
    need = min_tail_samples(q)
    counts = [s.count for s in summaries]
    series = [s.p99 for s in summaries]
    source = ("p99 of the server's handler_ms per window (ms)" if server else
              "p99 of the client's request latency per window (ms; the server reported no timing)")
    base = TailDetail(source=source, warmup_windows_discarded=skipped, min_samples=need, counts=counts,
                      windows=[w.window for w in windows], series=_round(series),
                      limit=limits.p99_latency_limit_pct_per_h, unit="%/h")
    short = [c for c in counts if c < need]
    if short or not windows:
        fewest = f" (fewest {min(short)})" if short else ""
        return MetricVerdict(metric="server_p99_latency", outcome=INCONCLUSIVE, detail=base,
                             reason=f"not enough samples: {len(short)} of {len(windows)} windows hold fewer "
                                    f"than {need}{fewest}; a p99 is judged only where every window holds at "
                                    f"least ceil(10/(1-q)) = {need}")
    origin = windows[0].start_unix_ns
    times = [_mid_h(w, origin) for w in windows]
    trend = judge_relative_trend(times, [float(v) for v in series if v is not None],
                                 limits.p99_latency_limit_pct_per_h,
                                 baseline_windows=limits.latency_baseline_windows, rule=trend_rule(limits))
    return MetricVerdict(metric="server_p99_latency", outcome=trend.outcome, detail=_with_trend(base, trend),
                         reason=f"p99 per window, in % of baseline: {trend.reason}")


def _error_rate(windows: Sequence[WindowStats], limit: float, skipped: int,
                cut_short: Collection[str] = ()) -> MetricVerdict:
    # A window the user's stop cut short is reported as such and never judged: the signal may have
    # ended it before its first request, or mid-request.
    cut = [w.window for w in windows if w.window in cut_short]
    windows = [w for w in windows if w.window not in cut_short]
    issued = sum(w.issued for w in windows)
    errors = sum(w.errors for w in windows)
    by_cause: dict[str, int] = {}
    for w in windows:
        for cause, n in w.by_cause.items():
            by_cause[cause] = by_cause.get(cause, 0) + n
    worst = max(windows, key=lambda w: w.error_rate or 0.0, default=None)
    detail = ErrorRateDetail(limit=limit, issued=issued, errors=errors, by_cause=dict(sorted(by_cause.items())),
                             warmup_windows_discarded=skipped, rate=errors / issued if issued else None,
                             worst_window=worst.window if worst else "", worst_rate=worst.error_rate if worst else None,
                             series=[w.error_rate for w in windows], cut_short=cut)
    cut_text = f"; cut short by the stop, not judged: {', '.join(cut)}" if cut else ""
    if not windows:
        return MetricVerdict(metric="error_rate", outcome=INCONCLUSIVE, detail=detail,
                             reason=f"no window after discarding {skipped} warmup window(s)" + cut_text)
    if not issued:
        # Windows ran but nothing was sent: the load never reached the server, which is no pass.
        return MetricVerdict(metric="error_rate", outcome=FAIL, detail=detail,
                             reason=f"no profiling request was recorded in {len(windows)} window(s) after warmup")
    rate = errors / issued
    causes = ", ".join(f"{k}: {v}" for k, v in sorted(by_cause.items()))
    text = (f"{errors}/{issued} = {gate_pct(rate, limit)} (limit {limit * 100:g}%) over {len(windows)} window(s)"
            + (f" after {skipped} warmup window(s)" if skipped else "") + (f"; by cause: {causes}" if causes else "")
            + cut_text)
    if rate > limit:
        return MetricVerdict(metric="error_rate", outcome=FAIL, detail=detail, reason=f"too high: {text}")
    return MetricVerdict(metric="error_rate", outcome=PASS, detail=detail, reason=text)


def _correctness(windows: Sequence[WindowStats]) -> MetricVerdict:
    """A window's gate decides only with the evidence to: a window fails when its pass rate is below the gate
    beyond chance (its Wilson upper bound under the required rate, one-sided 5 % shared over the scored
    windows, Bonferroni), since a dozen answers of a 94 %-correct model miss a 90 % gate by sampling alone.
    Pooled over the windows, each gate is applied exactly as bench.toml states it; a shortfall that is not
    significant anywhere is inconclusive."""
    unscored = [w.window for w in windows if w.correctness_passed is None]
    pooled: dict[tuple[str, str, float], list[int]] = {}
    significant: list[str] = []
    short: list[str] = []
    scored_windows = max(1, sum(1 for w in windows if any(g.total for g in w.gates)))
    confidence = 1.0 - 0.10 / scored_windows  # two-sided, so each window's one-sided level is 5 % / k
    for w in windows:
        for g in w.gates:
            if not g.total:
                continue
            acc = pooled.setdefault((g.gate, g.scope, g.required), [0, 0])
            acc[0] += g.correct
            acc[1] += g.total
            if g.passed:
                continue
            text = f"{w.window} {g.scope} {g.correct}/{g.total} < {g.required:g}"
            upper = wilson_interval(g.correct, g.total, confidence=confidence).upper
            (significant if upper is not None and upper < g.required else short).append(text)
    overall = [PooledGate(gate=gate, scope=scope, required=required, correct=c, total=n)
               for (gate, scope, required), (c, n) in pooled.items()]
    pooled_short = [f"{g.scope} {g.correct}/{g.total} < {g.required:g} over all windows"
                    for g in overall if Fraction(g.correct, g.total) < Fraction(repr(g.required))]
    per_window = [WindowCorrectness(window=w.window, correct=w.correct, scored=w.scored, passed=w.correctness_passed,
                                    gates=[g for g in w.gates if g.total and not g.passed]) for w in windows]
    detail = CorrectnessDetail(windows=per_window, unscored=unscored, significantly_below=significant,
                               below_by_chance=short, pooled=overall)
    if significant:
        return MetricVerdict(metric="correctness", outcome=FAIL, detail=detail,
                             reason=f"below the gate beyond chance in {len(significant)} window(s): "
                                    + "; ".join(significant))
    if not overall:
        return MetricVerdict(metric="correctness", outcome=INCONCLUSIVE, detail=detail,
                             reason="no window had a scored answer")
    totals = ", ".join(f"{g.scope} {g.correct}/{g.total}" for g in overall)
    if pooled_short or short:
        why = "; ".join(pooled_short + [f"{s} (within chance)" for s in short])
        return MetricVerdict(metric="correctness", outcome=INCONCLUSIVE, detail=detail,
                             reason=f"below the gate, but not beyond chance: {why}; overall {totals}")
    return MetricVerdict(metric="correctness", outcome=PASS, detail=detail,
                         reason=f"every scored window meets the gate ({totals} overall"
                                + (f"; unscored: {', '.join(unscored)}" if unscored else "") + ")")


_SAMPLED = (
    ("server_rss", "resident memory of the server's process tree, every sample (MiB)"),
    ("server_gpu_memory", "GPU memory of the server's processes, every sample (MiB)"),
    ("device_gpu_memory", "GPU memory used on the server's GPUs by every process, every sample (MiB): per-process "
                          "figures were unavailable (PID namespace), so another process's memory counts too"),
    ("orchestrator_rss", "resident memory of aqbench's own process, every sample (MiB)"),
    ("aiperf_rss", "resident memory of the load generator's (AIPerf's) process tree, every sample (MiB)"),
)


_GPU_METRICS = ("server_gpu_memory", "device_gpu_memory")  # judged only where the samples have them


def judge_soak(evidence: SoakEvidence, limits: SoakLimits, *, processes: ProcessCheck | None = None,
               gap_allowance: GapAllowance = GapAllowance()) -> list[MetricVerdict]:
    """Every verdict over `evidence`'s closed windows (in index order), at `limits`. `processes` is given only
    at the end (the process check is a final verdict); `gap_allowance` is the idle time an open-loop schedule
    itself leaves (load_coverage.schedule_allowance)."""
    e = evidence
    windows, samples, ratios, load_span_ns, first_pass = e.windows, e.samples, e.ratios, e.load_span_ns, e.first_pass
    aiperf_generations, cut_short = e.aiperf_generations, e.cut_short
    # The evidence's parts, as the rules take them: the server's unplanned ends and restarts go to
    # judge_restarts; `cut_short` windows are reported, not judged for errors; `runs` (ended), `running` and
    # `stopped` (by the stop signal) are the accounting's. With `samples` and the load's span, memory is
    # judged on the samples (judge.sampled_trend), aiperf_rss too; without them, on the windows' medians
    # (judge.memory). With `ratios` and the span, latency drift is judged on them; without, on per-window
    # medians. `first_pass` cuts the sampled memory span (see _sampled_memory). `handovers` are judged as
    # cuts by window_gap, beyond `gap_allowance` and net of `host_pauses` (a suspended host; soak/pauses.py).
    # With two or more `aiperf_generations` (a handover), aiperf_rss is judged per generation.
    ordered = sorted(windows, key=lambda w: w.index)
    skipped = min(limits.warmup_windows, len(ordered))
    judged = ordered[skipped:]
    if samples is not None and load_span_ns is not None:
        verdicts = [_aiperf_generations(aiperf_generations, limits, load_span_ns[0] / 1e9, source)
                    if metric == "aiperf_rss" and len(aiperf_generations) > 1 else
                    _sampled_memory(metric, samples.get(metric), limits, load_span_ns, source, first_pass)
                    for metric, source in _SAMPLED if metric in samples or metric not in _GPU_METRICS]
    else:
        verdicts = [
            _memory("server_rss", judged, lambda w: w.rss, limits, skipped,
                    "median resident memory of the server's process tree per window (MiB)"),
        ]
        if any(w.gpu_memory.samples for w in ordered):
            verdicts.append(_memory("server_gpu_memory", judged, lambda w: w.gpu_memory, limits, skipped,
                                    "median GPU memory of the server's processes per window (MiB)"))
        verdicts.append(_memory("orchestrator_rss", judged, lambda w: w.orchestrator_rss, limits, skipped,
                                "median resident memory of aqbench's own process per window (MiB)"))
    verdicts += [
        _sampled_drift(ratios, limits, load_span_ns[1]) if ratios is not None and load_span_ns is not None
        else _item_drift(judged, limits, skipped),
        _tail(judged, limits, skipped),
        _error_rate(judged, limits.max_error_rate, skipped, cut_short),
        _correctness(ordered),
        judge_restarts(e.exits, e.restarts),
        window_gaps(ordered, limits, e.handovers, gap_allowance, e.host_pauses),
        accounting(ordered, e.runs, e.running, e.stopped, cut_short, e.tails),
    ]
    if processes is not None:
        verdicts.append(judge_processes(processes))
    return verdicts
