"""A page opened late shows what the reports say: the state `/state` rebuilds from any prefix of a journal holds
exactly the soak windows and verdicts soak.json's fold gives for that prefix, the sweep points and capacity of
sweep.json's fold, and the server restarts and exits of the soak fold; the live changes after it lead to the
same state as a page opened at the end."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest
from config_support import make_config

from orchestrator.events import (
    AnyEvent,
    MemoryDetail,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    PointStats,
    RequestCorrelated,
    RequestUnmatched,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerRestarting,
    SloCheck,
    SoakPhase,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
    WindowStats,
)
from orchestrator.live.report_rows import exit_text, soak_rows, sweep_rows
from orchestrator.live.state import PageFold, PageState
from orchestrator.live.tail import JournalTail
from orchestrator.reports.fold import fold
from orchestrator.reports.schema import PhaseCounts
from orchestrator.reports.soak import fold_soak
from orchestrator.reports.sweep import fold_sweep
from orchestrator.reports.windows import PhaseTally
from orchestrator.spine.journal import encode_event, read_journal


def _stamp(events: list[AnyEvent]) -> list[AnyEvent]:
    return [msgspec.structs.replace(ev, seq=i, ts_ns=1_000_000_000 * i) for i, ev in enumerate(events, 1)]


def _window(i: int) -> list[AnyEvent]:
    name = f"soak/w{i:04d}"
    return [SoakWindowOpened(window=name, index=i, start_unix_ns=i),
            *(RequestCorrelated(request_id=f"{i}-{k}", window=name, phase="profiling", ok=k != 2,
                                cause="ok" if k != 2 else "timeout", request_latency_ms=10.0 * k) for k in range(3)),
            SoakWindowClosed(window=name, index=i, summary=WindowStats(
                window=name, index=i, start_unix_ns=i, end_unix_ns=i + 1, issued=3, ok=2, errors=1,
                accounting_balanced=True))]


def _verdict(metric: str, outcome: str, *, final: bool, closed: int) -> SoakVerdict:
    return SoakVerdict(metric=metric, passed=outcome == "pass", outcome=outcome, final=final, windows_closed=closed,
                       slope=0.5 * closed, interval=[0.1, 0.2 * closed], limit=10.0, unit="MiB/h",
                       detail=MemoryDetail(slope=0.5 * closed, interval=[0.1, 0.2 * closed], limit=10.0, unit="MiB/h"),
                       reason=f"checked after {closed} windows")


def _soak() -> list[AnyEvent]:
    """A soak with checkpoints, a server killed and restarted, final verdicts, then a checkpoint's late echo."""
    return _stamp([
        RunStarted(command="soak", config=make_config()),
        PhaseStarted(phase="soak", model="m", detail=SoakPhase(duration_s=60.0, window_s=15.0)),
        *_window(1), _verdict("server_rss", "inconclusive", final=False, closed=1),
        *_window(2), _verdict("server_rss", "pass", final=False, closed=2),
        _verdict("error_rate", "fail", final=False, closed=2),
        ServerExited(incarnation=1, pid=9, returncode=-9, signal="SIGKILL", during="run"),
        ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason="killed by SIGKILL"),
        *_window(3), _verdict("server_rss", "pass", final=True, closed=3),
        _verdict("error_rate", "fail", final=True, closed=3),
        _verdict("server_rss", "fail", final=False, closed=3),  # never replaces the final one
        RunFinished(status="failed", exit_code=1),
    ])


def _point(offered: float, outcome: str, runs: int = 1) -> SweepPointJudged:
    return SweepPointJudged(index=0, mode="rate", offered=offered, outcome=outcome,  # type: ignore[arg-type]
                            windows=[f"m/rate{offered:g}-{i}" for i in range(1, runs + 1)],
                            checks=[SloCheck(slo="p99_latency", outcome=outcome, reason=f"{outcome} at {offered:g}")],  # type: ignore[arg-type]
                            stats=PointStats(requests=100 * runs, ok=100 * runs, latency_p99_ms=offered * 100))


def _sweep() -> list[AnyEvent]:
    return _stamp([
        RunStarted(command="sweep", config=make_config()),
        PhaseStarted(phase="sweep", detail=SweepPhase(mode="rate", points=[1.0, 4.0, 2.0])),
        _point(1.0, "pass"), _point(4.0, "fail"), _point(2.0, "inconclusive"), _point(2.0, "pass", runs=2),
        SweepConcluded(outcome="bracketed", mode="rate", unit="req/s", capacity=2.0, highest_passing=2.0,
                       lowest_failing=4.0, summary="capacity 2 req/s"),
        RunFinished(status="ok", exit_code=0),
    ])


def _late_page(tmp_path: Path, events: list[AnyEvent]) -> PageState:
    tmp_path.mkdir(parents=True, exist_ok=True)
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(b"".join(encode_event(e) + b"\n" for e in events))
    return JournalTail(journal).state()


@pytest.mark.parametrize("cut", range(1, len(_soak()) + 1))
def test_a_late_soak_page_shows_what_the_soak_report_says(tmp_path: Path, cut: int) -> None:
    """At every point of the journal: the page's verdicts and closed windows are soak.json's (live), row for row,
    and the server's restarts and unexpected exits are the soak report's."""
    prefix = _soak()[:cut]
    page = _late_page(tmp_path, prefix)
    report = fold_soak(prefix, live=True)
    verdicts, windows = soak_rows(report)
    assert {v.name: v for v in page.verdicts} == {v.name: v for v in verdicts}
    assert [w for w in page.windows if w.state == "closed"] == windows
    assert (page.server.restarts, page.server.exits) == (report.restarts, [exit_text(e) for e in report.exits])
    assert page.run.done == len(report.windows)


def test_the_soak_rows_are_the_reports_numbers() -> None:
    """Not only equal to each other: the final verdict wins over the late checkpoint, and windows keep their counts."""
    events = _soak()
    verdicts, windows = soak_rows(fold_soak(events))
    shown = {v.name: (v.outcome, v.final, v.estimate, v.interval) for v in verdicts}
    assert shown == {"server_rss": ("pass", True, 1.5, [0.1, 0.6000000000000001]),
                     "error_rate": ("fail", True, 1.5, [0.1, 0.6000000000000001])}
    assert [(w.name, w.issued, w.ok, w.errors, w.balanced) for w in windows] == [
        (f"soak/w000{i}", 3, 2, 1, True) for i in (1, 2, 3)]


@pytest.mark.parametrize("cut", range(1, len(_sweep()) + 1))
def test_a_late_sweep_page_shows_what_the_sweep_report_says(tmp_path: Path, cut: int) -> None:
    """At every point of the journal: the page's points (each its latest judgement) and capacity are sweep.json's."""
    prefix = _sweep()[:cut]
    page = _late_page(tmp_path, prefix)
    points, capacity = sweep_rows(fold_sweep(prefix))
    assert sorted(page.points, key=lambda p: p.offered) == points
    assert [v for v in page.verdicts if v.name == "capacity"] == ([capacity] if capacity else [])


@pytest.mark.parametrize("events", [_soak(), _sweep()], ids=["soak", "sweep"])
def test_a_late_page_then_live_changes_end_where_a_page_opened_at_the_end_does(tmp_path: Path,
                                                                                events: list[AnyEvent]) -> None:
    """The live fold (fed the bus after the journal prefix) and the late page agree: the rows it puts after the
    prefix, laid over the late page, give the state of the whole journal."""
    half = len(events) // 2
    page = _late_page(tmp_path, events[:half])
    live = PageFold()
    live.add_all(events[:half])
    rows = {(ch.section, ch.value.name): ch.value for ch in live.add_all(events[half:]) if ch.op == "put"}
    end = _late_page(tmp_path / "end", events)
    for section in ("verdicts", "windows", "points"):
        merged = {r.name: r for r in getattr(page, section)}
        merged.update({name: r for (s, name), r in rows.items() if s == section})
        assert merged == {r.name: r for r in getattr(end, section)}, section


_JOURNALS = Path(__file__).resolve().parents[2] / "data" / "journals"


def _report_counts(events: list[AnyEvent]) -> tuple[PhaseCounts, int, int]:
    """The profiling requests the report of `events` counts over its windows, its warmup requests and its
    unmatched halves."""
    windows = fold(events).windows
    total = PhaseTally()
    for w in windows:
        p = w.counts.profiling
        total.issued += p.issued
        total.ok += p.ok
        total.by_cause.update(p.by_cause)
        total.by_rule.update(p.by_rule)
    return (total.frozen(), sum(w.counts.warmup.issued for w in windows),
            sum(sum(w.counts.unmatched.values()) for w in windows))


def _failing() -> list[AnyEvent]:
    """The soak above with what its windows lack: warmup requests, a crash rule's errors, unmatched halves."""
    extra: list[AnyEvent] = [
        RequestCorrelated(request_id="w-1", window="soak/w0002", phase="warmup", ok=True, cause="ok"),
        RequestCorrelated(request_id="c-1", window="soak/w0002", phase="profiling", ok=False, cause="server_crash",
                          cause_rule="open_at_exit"),
        RequestCorrelated(request_id="c-2", window="soak/w0002", phase="unknown", ok=False, cause="timeout"),
        RequestUnmatched(request_id="u-1", half="client", cause="no_server_record", window="soak/w0002"),
        RequestUnmatched(request_id="u-2", half="server", cause="duplicate_id", window="soak/w0003")]
    events = _soak()
    at = next(i for i, ev in enumerate(events) if isinstance(ev, ServerExited))
    return _stamp([*events[:at], *extra, *events[at:]])


@pytest.mark.parametrize("name", ["qualify-v2", "soak-v2", "failing"])
def test_the_page_counts_requests_as_the_report_does_at_every_request(tmp_path: Path, name: str) -> None:
    """The page's request counters are the report's tally (reports/windows.py), summed over its windows: at every
    request event of a journal (two real ones, and the soak above with errors by cause and crash rule, warmup and
    unmatched halves), and at its end, the page and the report of that prefix agree."""
    journal = tmp_path / "events.jsonl"
    if name == "failing":
        journal.write_bytes(b"".join(encode_event(e) + b"\n" for e in _failing()))
    else:
        journal.write_bytes(gzip.decompress((_JOURNALS / name / "events.jsonl.gz").read_bytes()))
    events, _torn = read_journal(journal)
    cuts = [i + 1 for i, ev in enumerate(events) if isinstance(ev, RequestCorrelated | RequestUnmatched)]
    cuts.append(len(events))
    assert len(cuts) > 10
    page, done = PageFold(), 0
    for cut in cuts:
        page.add_all(events[done:cut])
        done = cut
        counters = page.state().counters
        profiling, warmup, unmatched = _report_counts(events[:cut])
        assert profiling.issued > 0 or cut < cuts[-1]
        assert (counters.issued, counters.ok, counters.errors, counters.by_cause, counters.by_rule) == \
            (profiling.issued, profiling.ok, profiling.errors, profiling.by_cause, profiling.by_rule), cut
        assert (counters.warmup, counters.unmatched) == (warmup, unmatched), cut


@pytest.mark.parametrize(("name", "cut_last"), [("qualify-v2", False), ("qualify-v2", True), ("soak-v2", False)])
def test_a_models_row_ends_as_the_report_says(tmp_path: Path, name: str, cut_last: bool) -> None:
    """A model's row, once it has ended (its result, its soak's end, or the run's), holds the report's status,
    failed stage and reason for that prefix of the journal; `cut_last`: the journal ends with the run interrupted
    in the middle of its last model, which the page then shows as the report does."""
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(gzip.decompress((_JOURNALS / name / "events.jsonl.gz").read_bytes()))
    events, _torn = read_journal(journal)
    if cut_last:
        last = max(i for i, ev in enumerate(events) if isinstance(ev, PhaseStarted) and ev.phase == "correctness")
        events = [*events[:last + 1], msgspec.structs.replace(
            RunFinished(status="interrupted", exit_code=130, reason="SIGINT"), seq=events[last].seq + 1)]
    page, done, compared = PageFold(), 0, 0
    ends = [i + 1 for i, ev in enumerate(events) if isinstance(ev, ModelResult | RunFinished)
            or (isinstance(ev, PhaseFinished) and ev.phase == "model")]
    for cut in ends:
        page.add_all(events[done:cut])
        done = cut
        report = {r.model: r for r in fold(events[:cut]).rows}
        for row in page.state().models:
            if row.state != "running":
                want = report[row.name]
                assert (row.state, row.stage, row.reason) == \
                    (want.status, want.failed_stage or "done", want.reason[:300]), (cut, row)
                compared += 1
    assert compared >= len(ends)
    assert page.state().models and all(m.state != "running" for m in page.state().models)
    if cut_last:
        assert page.state().models[-1].state == "interrupted"
