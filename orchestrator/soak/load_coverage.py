"""The load's verdicts: time without load (`window_gap`: window cuts and AIPerf handovers) and every request
accounted (`accounting`: each window's invariant, and what the AIPerf runs of each segment issued)."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Literal

import msgspec

from orchestrator.base.figures import figure
from orchestrator.events import (
    AccountingDetail,
    AiperfRunFact,
    GapDetail,
    RunAccount,
    SoakLimits,
    SoakTail,
    WindowGap,
    WindowStats,
)
from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, PASS
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.pauses import HostPause, paused_within

__all__ = ["GapAllowance", "accounting", "schedule_allowance", "window_gaps"]

# Poisson arrivals leave an idle time longer than -ln(p)/rate with probability p (memoryless): with p = 1 % over
# the number of cuts judged, a whole soak's cuts exceed their allowance by chance less than 1 % of the time.
_FALSE_FAIL = 0.01


class GapAllowance(msgspec.Struct, frozen=True, kw_only=True):
    """Idle time the load's own schedule leaves between requests (open loop), which no cut or handover causes."""

    request_rate: float | None = None
    arrival_pattern: Literal["constant", "poisson"] = "constant"

    def seconds(self, cuts: int) -> float:
        """Closed loop: none, a request is always open. Constant arrivals leave up to 1/rate between requests;
        Poisson arrivals an exponential time, beyond -ln(0.01 / cuts)/rate in 1 % of soaks of `cuts` cuts."""
        if not self.request_rate:
            return 0.0
        if self.arrival_pattern == "poisson":
            return -math.log(_FALSE_FAIL / max(1, cuts)) / self.request_rate
        return 1.0 / self.request_rate

    def why(self, cuts: int) -> str:
        seconds = self.seconds(cuts)
        if self.arrival_pattern == "poisson":
            return (f"the {figure(seconds)} s that the schedule's own Poisson arrivals at {self.request_rate:g}/s leave "
                    f"idle at one of {cuts} cut(s) in under 1 % of soaks")
        return f"the schedule's own {figure(seconds)} s between requests (constant arrivals at {self.request_rate:g}/s)"


def schedule_allowance(request_rate: float | None, arrival_pattern: Literal["constant", "poisson"]) -> GapAllowance:
    """The allowance of a soak's load: none in closed loop (no rate), else its schedule's (GapAllowance)."""
    return GapAllowance(request_rate=request_rate, arrival_pattern=arrival_pattern)


def _gap_row(window: str, gap_s: float, end_unix_ns: int | None, pauses: list[HostPause],
             segment: int = 0) -> WindowGap:
    """A gap's row (a cut's or a handover's), with the host pause inside it: the gap ends at `end_unix_ns`, the
    first request after it (unknown: no pause credited)."""
    paused = paused_within(pauses, end_unix_ns - round(gap_s * 1e9), end_unix_ns) if end_unix_ns and pauses else 0.0
    return WindowGap(window=window, gap_s=round(gap_s, 3), segment=segment, paused_s=round(paused, 3))


def window_gaps(windows: Sequence[WindowStats], limits: SoakLimits,
                handovers: Sequence[tuple[str, float | None, int | None]] = (),
                allowance: GapAllowance = GapAllowance(), pauses: Sequence[HostPause] = ()) -> MetricVerdict:
    """Time without load across each cut (gap_before_s) and each AIPerf handover (`handovers`: its name, gap and
    the gap's end, the successor's first request, unix ns): each at most `max_window_gap_s`, their sum at most `max_gap_fraction` of the soak (first window's
    start to last window's end). A handover whose gap is unknown is no cut judged. In open loop each gap is
    judged beyond `allowance` (schedule_allowance: the idle time the rate itself leaves, which a cut at 1
    request/s would otherwise be failed for); each row keeps its measured gap. A gap (a cut's or a handover's
    whose end is known) is judged net of the host's own pauses inside it (`pauses`: a suspended VM, in which no process could send; the row's
    `paused_s`, named in the reason)."""
    paused_list = list(pauses)
    rows = [_gap_row(w.window, w.gap_before_s, w.first_request_unix_ns, paused_list, w.segment)
            for w in windows[1:] if w.gap_before_s is not None]
    rows += [_gap_row(f"handover {name}", gap, end, paused_list) for name, gap, end in handovers if gap is not None]
    span_s = (windows[-1].end_unix_ns - windows[0].start_unix_ns) / 1e9 if windows else 0.0

    allowed = allowance.seconds(len(rows))

    def excess(r: WindowGap) -> float:
        return max(0.0, r.gap_s - r.paused_s - allowed)

    total = sum(excess(r) for r in rows)
    detail = GapDetail(limit=limits.max_window_gap_s, unit="s", max_fraction=limits.max_gap_fraction,
                       windows=rows, total_s=round(total, 3), span_s=round(span_s, 3),
                       allowance_s=round(allowed, 6))
    if len(windows) < 2:
        return MetricVerdict(metric="window_gap", outcome=INCONCLUSIVE, detail=detail,
                             reason=f"{len(windows)} window(s): no cut between windows to judge")
    if not rows:
        return MetricVerdict(metric="window_gap", outcome=INCONCLUSIVE, detail=detail,
                             reason="no window after the first has a measured first request")
    worst = max(rows, key=lambda r: r.gap_s)
    fraction = total / span_s if span_s > 0 else 0.0
    detail = msgspec.structs.replace(detail, fraction=fraction)
    over = [f"{r.window} {figure(r.gap_s)} s" for r in rows if excess(r) > limits.max_window_gap_s]
    judged = f" ({figure(total)} s beyond {allowance.why(len(rows))})" if allowed else ""
    host = [f"{r.window} {figure(r.paused_s)} of its {figure(r.gap_s)} s" for r in rows if r.paused_s]
    paused = (f"; not judged, the host's own pause (its wall clock ran ahead of its monotonic clock: a suspended "
              f"VM, no process running) in {len(host)} gap(s): {'; '.join(host)}") if host else ""
    how = (f"largest gap {figure(worst.gap_s)} s before {worst.window}, {figure(sum(r.gap_s for r in rows))} s in all"
           f"{judged} = {fraction:.3%} of {span_s:.0f} s over {len(rows)} cut(s); limits "
           f"{limits.max_window_gap_s:g} s per gap{' beyond the schedule' if allowed else ''} and "
           f"{limits.max_gap_fraction:.2%} of the soak{paused}")
    if over or fraction > limits.max_gap_fraction:
        what = f"gaps over the limit ({'; '.join(over)})" if over else "too much time without load"
        return MetricVerdict(metric="window_gap", outcome=FAIL, detail=detail, reason=f"{what}: {how}")
    return MetricVerdict(metric="window_gap", outcome=PASS, detail=detail, reason=how)


def accounting(windows: Sequence[WindowStats], runs: Sequence[AiperfRunFact], running: str,
                stopped: Collection[str], cut_short: Collection[str], tails: Sequence[SoakTail] = ()) -> MetricVerdict:
    """Every request accounted: each closed window's invariant held (AccountingChecked), and each ended AIPerf
    run issued, phase by phase, exactly the requests its windows and its segment's tail saw (`tails`: what a last
    window closed on time still had open, counted there once; its invariant is a window's). A run still going (`running`, at a
    checkpoint) is checked once it ends; an ended run that said nothing of what it issued cannot be checked.
    Nor can what the stop signal left unsettled: a shortfall of a run it ended (`stopped`), or a breach in a
    window it cut short (`cut_short`): AIPerf cancels its open requests at SIGINT without a record."""
    breached = [w.window for w in windows if w.accounting_balanced is False and w.window not in cut_short]
    unsettled = [w.window for w in windows if w.accounting_balanced is False and w.window in cut_short]
    # A tail's invariant is its window's: a stop that cut the window short leaves it unsettled, not breached.
    breached += [f"{t.window}'s tail" for t in tails if not t.balanced and t.window not in cut_short]
    unsettled += [f"{t.window}'s tail" for t in tails if not t.balanced and t.window in cut_short]
    seen: dict[int, dict[str, int]] = {}
    for w in windows:
        counts = seen.setdefault(w.segment, {})
        counts["profiling"] = counts.get("profiling", 0) + w.issued
        counts["warmup"] = counts.get("warmup", 0) + w.warmup_issued
    for t in tails:
        counts = seen.setdefault(t.segment, {})
        counts["profiling"] = counts.get("profiling", 0) + t.issued
        counts["warmup"] = counts.get("warmup", 0) + t.warmup_issued
    rows: list[RunAccount] = []
    lost: list[str] = []
    cut: list[str] = []
    unknown: list[str] = []
    # A segment's windows hold the requests of every AIPerf run that sent them (several with handovers):
    # what the runs of a segment issued together is what its windows saw.
    by_segment: dict[int, list[AiperfRunFact]] = {}
    for run in runs:
        by_segment.setdefault(run.segment, []).append(run)
        rows.append(RunAccount(run=run.name, segment=run.segment, issued=dict(run.issued),
                               issued_from=dict(run.issued_from), seen=dict(seen.get(run.segment, {}))))
        if not run.issued:
            unknown.append(run.name)
    for segment, mine in by_segment.items():
        got = seen.get(segment, {})
        want_all: dict[str, int] = {}
        for run in mine:
            for phase, n in run.issued.items():
                want_all[phase] = want_all.get(phase, 0) + n
        names = " + ".join(r.name for r in mine)
        for phase, want in sorted(want_all.items()):
            if got.get(phase, 0) != want:
                how = ", ".join(f"{r.issued_from.get(phase, '?')}" for r in mine)
                text = f"{names} {phase}: AIPerf issued {want} ({how}), {got.get(phase, 0)} were seen"
                stopped_short = any(r.name in stopped for r in mine) and got.get(phase, 0) < want
                (cut if stopped_short else lost).append(text)
    detail = AccountingDetail(windows=len(windows), breached_windows=breached, runs=rows, unknown=unknown,
                              running=running, stopped_short=cut, cut_short_breached=unsettled,
                              tails=[f"{t.window}/tail: {t.issued + t.warmup_issued}" for t in tails
                                     if t.issued or t.warmup_issued])
    total = sum(w.issued + w.warmup_issued for w in windows) + sum(t.issued + t.warmup_issued for t in tails)
    held = sum(t.issued + t.warmup_issued for t in tails)
    tail_text = f" (with {held} in the tail of a last window closed on time)" if held else ""
    still = f"; {running} still running: its count is checked when it ends" if running else ""
    if breached or lost:
        parts = ([f"the window invariant failed in {', '.join(breached)}"] if breached else []) + lost
        return MetricVerdict(metric="accounting", outcome=FAIL, detail=detail, reason="; ".join(parts) + still)
    if not windows:
        return MetricVerdict(metric="accounting", outcome=INCONCLUSIVE, detail=detail, reason="no window closed")
    if cut or unsettled:
        parts = ([f"the invariant failed in {', '.join(unsettled)}, which it cut short"] if unsettled else []) + cut
        return MetricVerdict(metric="accounting", outcome=INCONCLUSIVE, detail=detail,
                             reason=f"{len(windows) - len(unsettled)} window(s) balanced, but the stop signal ended "
                                    f"the load before every request AIPerf sent was recorded: {'; '.join(parts)}"
                                    + still)
    if unknown:
        return MetricVerdict(metric="accounting", outcome=INCONCLUSIVE, detail=detail,
                             reason=f"{len(windows)} window(s) balanced, but {', '.join(unknown)} said nothing of how "
                                    "many requests it sent (no sending-complete line in its log, no phase manifest), "
                                    "so a request it lost cannot be ruled out" + still)
    return MetricVerdict(metric="accounting", outcome=PASS, detail=detail,
                         reason=f"{total} request(s) in {len(windows)} window(s){tail_text} balanced; {len(runs)} ended AIPerf "
                                f"run(s) issued exactly what was seen" + still)
