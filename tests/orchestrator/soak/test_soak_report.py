"""The soak report fold and renderers, and the live status line, on small synthetic event streams."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgspec
import pytest
from config_support import make_config
from soak_support import T0, _stats, _window

from orchestrator.events import (
    AiperfGeneration,
    AnyEvent,
    MemorySummary,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RunFinished,
    RunStarted,
    SampledMemoryDetail,
    ServerExited,
    ServerRestarting,
    SoakLimits,
    SoakPhase,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
)
from orchestrator.reports.fold import fold
from orchestrator.reports.markdown import render_markdown
from orchestrator.reports.soak import fold_soak, render_soak_html, render_soak_markdown
from orchestrator.reports.text import dash
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.plan import plan_trends
from orchestrator.soak.summary import print_summary
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import read_journal
from orchestrator.view.soak import SoakView, format_status


def _v2_verdict(**fields: Any) -> dict[str, Any]:
    """A soak verdict line as a journal of schema 2 wrote it: its detail a dict of anything."""
    return {"kind": "soak_verdict", **fields}


def _schema_2(tmp_path: Path, events: list[Any]) -> list[AnyEvent]:
    """`events` as a journal of schema 2 wrote them (a verdict's detail a dict of anything), read back through
    the journal reader, which upgrades them."""
    if not isinstance(events[0], RunStarted):
        events = [RunStarted(command="soak"), *events]
    events = [msgspec.structs.replace(events[0], schema_version=2), *events[1:]]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode({**e, "seq": i + 1} if isinstance(e, dict) else
                                                  msgspec.structs.replace(e, seq=i + 1)) + b"\n"
                              for i, e in enumerate(events)))
    read, torn = read_journal(path)
    assert torn is None
    return read


class TestSoakReport:
    def test_final_verdict_wins_over_checkpoint_and_tables_show_numbers(self, tmp_path: Path) -> None:
        """A final verdict replaces the checkpoint's; the markdown verdict table carries slope and limit (kept in
        the detail by journals before schema 2's typed numbers)."""
        events = [
            RunStarted(command="soak", config=make_config(soak={"window_s": 15.0})),
            _window(1, 300), _window(2, 310),
            _v2_verdict(metric="server_rss", passed=True, final=False,
                        detail={"judged": False, "reason": "not judged", "windows_closed": 2}),
            _window(3, 400),
            _v2_verdict(metric="server_rss", passed=False, final=True,
                        detail={"judged": True, "reason": "drifts: slope +9e+03 MiB/h", "slope": 9000.0,
                                "growth": 8000.0, "limit": 8.0, "unit": "MiB/h", "windows_closed": 3}),
            _v2_verdict(metric="server_rss", passed=True, final=False, detail={"reason": "late checkpoint"}),
            ServerExited(incarnation=1, pid=9, returncode=-9, signal="SIGKILL", expected=False),
            ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0),
            RunFinished(status="failed"),
        ]
        report = fold_soak(_schema_2(tmp_path, events))
        assert [w.window for w in report.windows] == ["soak/w0001", "soak/w0002", "soak/w0003"]
        assert report.verdicts_final and report.restarts == 1 and report.status == "failed"
        md = render_soak_markdown(report)
        assert "Soak FAILED (server_rss)" in md
        assert "| server_rss | FAIL | final | 9,000 | – | 8 | MiB/h | drifts: slope +9e+03 MiB/h |" in md
        assert "| soak/w0002 | 10 | 9 | 1 (server_crash 1) |" in md
        html = render_soak_html(report)
        for chart in ("soak-latency", "soak-memory", "soak-errors", "soak-correctness"):
            assert chart in html

    def test_typed_verdict_numbers_reach_the_table(self) -> None:
        """A verdict journaled with its own slope, interval, limit and unit shows them; its reason too."""
        events = [RunStarted(command="soak", config=make_config(soak={"window_s": 15.0})), _window(1, 300),
                  SoakVerdict(metric="server_rss", passed=False, outcome="fail", final=True, reason="drifts",
                              slope=9000.0, interval=[20.0, 63.5], limit=8.0, unit="MiB/h", windows_closed=1),
                  RunFinished(status="failed")]
        md = render_soak_markdown(fold_soak(events))
        assert "| server_rss | FAIL | final | 9,000 | [20, 63.5] | 8 | MiB/h | drifts |" in md

    def test_aiperf_generations_table_after_a_handover(self) -> None:
        """aiperf_rss judged per AIPerf process shows a generations table (pid, start, level, growth within,
        requests) in soak.md and soak.html; a soak without one shows none."""
        gens = [AiperfGeneration(pid=41, start_s=0.0, level_mib=1000.25, peak_growth_mib=12.5, outcome="pass",
                                 points=30, requests=5491),
                AiperfGeneration(pid=42, start_s=183.0, outcome="inconclusive", points=3)]
        verdict = SoakVerdict(metric="aiperf_rss", passed=False, outcome="inconclusive", final=True, reason="r",
                              detail=SampledMemoryDetail(generations=gens))
        events = [RunStarted(command="soak", config=make_config(soak={"window_s": 15.0})), _window(1, 300), verdict,
                  RunFinished(status="ok")]
        report = fold_soak(events)
        md, html = render_soak_markdown(report), render_soak_html(report)
        assert "## AIPerf generations" in md
        assert "| 41 | 0.0 | 1,000 | 12.5 | PASS | 5491 |" in md
        assert "| 42 | 3.0 | - | - | not settled | - |" in md.replace(dash, "-")
        assert "<td>41</td><td>0.0</td><td>1,000</td><td>12.5</td><td>PASS</td><td>5491</td>" in html
        plain = fold_soak([*events[:2], msgspec.structs.replace(verdict, detail=SampledMemoryDetail()), events[-1]])
        assert "AIPerf generations" not in render_soak_markdown(plain) + render_soak_html(plain)

    def test_window_table_and_chart_show_gap_and_the_observer(self) -> None:
        """Each window row shows the time without load before it, aqbench's and AIPerf's memory and the AIPerf
        run it was cut from; the gap and observer charts are drawn."""
        w2 = _window(2, 300)
        assert w2.summary is not None
        w2 = SoakWindowClosed(window=w2.window, index=2, summary=msgspec.structs.replace(
            w2.summary, gap_before_s=0.004, segment=1, orchestrator_rss=MemorySummary(median_bytes=120 * 2**20),
            aiperf_rss=MemorySummary(median_bytes=800 * 2**20)))
        report = fold_soak([RunStarted(command="soak"), _window(1, 300), w2])
        md = render_soak_markdown(report)
        assert "| aqbench/AIPerf RSS MiB | restarts | gap before s | AIPerf run |" in md
        assert "| 120/800 | 0 | 0.004 | 1 (complete) |" in md
        assert "| –/– | 0 | – | – (complete) |" in md  # window 1: no gap before it, no observer sample
        html = render_soak_html(report)
        assert "soak-gaps" in html and "soak-observer" in html

    def test_inconclusive_verdicts_are_listed_at_the_top(self, tmp_path: Path) -> None:
        """An inconclusive verdict is no failure and no pass: the headline says INCONCLUSIVE, naming it (issue
        29: it read PASSED), and the verdict is listed with its reason before the verdict table."""
        events = [RunStarted(command="soak"), _window(1, 300),
                  _v2_verdict(metric="server_rss", passed=False, final=True, outcome="inconclusive",
                              detail={"reason": "not enough evidence (2 of 6 windows)"}),
                  _v2_verdict(metric="restarts", passed=True, final=True, outcome="pass",
                              detail={"reason": "no unexpected server exit"}),
                  RunFinished(status="ok")]
        md = render_soak_markdown(fold_soak(_schema_2(tmp_path, events)))
        assert "Soak INCONCLUSIVE (server_rss; no verdict failed); verdicts: final; run status: ok" in md
        assert "PASSED" not in md
        top = md.index("Inconclusive (the evidence cannot decide; not a failure unless run with --strict):")
        assert top < md.index("## Verdicts")
        assert "- server_rss: not enough evidence (2 of 6 windows)" in md
        assert "| server_rss | INCONCLUSIVE | final |" in md

    def test_old_journal_verdicts_map_to_three_outcomes(self, tmp_path: Path) -> None:
        """A journal from before the three outcomes: passed+judged is pass, passed unjudged is inconclusive."""
        report = fold_soak(_schema_2(tmp_path, [_v2_verdict(metric="a", passed=True, detail={"judged": False}),
                                                _v2_verdict(metric="b", passed=True, detail={"judged": True}),
                                                _v2_verdict(metric="c", passed=False, detail={})]))
        assert [v.outcome for v in report.verdicts] == ["inconclusive", "pass", "fail"]

    def test_journal_without_run_finished_reads_interrupted(self) -> None:
        """No RunFinished, folded after the fact: the report says the run was interrupted and the verdicts
        are checkpoint ones."""
        report = fold_soak([RunStarted(command="soak"), _window(1, 300),
                            SoakVerdict(metric="restarts", passed=True, reason="ok", windows_closed=1)])
        assert report.status == "interrupted" and not report.verdicts_final
        assert "verdicts: checkpoint; run status: interrupted" in render_soak_markdown(report)

    def test_checkpoint_report_of_a_running_soak_says_in_progress(self) -> None:
        """A checkpoint report (live) says "in progress" with the windows closed so far, never "interrupted"."""
        events = [RunStarted(command="soak"), _window(1, 300), _window(2, 301),
                  SoakVerdict(metric="restarts", passed=True, outcome="pass", reason="no unexpected server exit",
                              windows_closed=2)]
        report = fold_soak(events, live=True)
        md, html = render_soak_markdown(report), render_soak_html(report)
        assert report.status == "in progress"
        assert "verdicts: checkpoint; run status: in progress; windows closed: 2" in md
        assert ("Reason: the soak is running; this checkpoint report covers the 2 window(s) closed so far"
                in md)
        assert "interrupted" not in md and "interrupted" not in html


class TestSoakView:
    def test_status_line_names_every_figure(self) -> None:
        """The line shows elapsed/duration, windows, ok/errors, last-window p50/p99 client and server, rss, restarts."""
        line = format_status(elapsed_s=3725, duration_s=8 * 3600, windows=12, window="soak/w0013", ok=1000, errors=2,
                             last=_stats({"window": "soak/w0012", "index": 12, "start_unix_ns": 0, "end_unix_ns": 1,
                                          "client_latency_ms": {"p50": 101.2, "p99": 250.0},
                                          "server_latency_ms": {"p50": 90.0, "p99": 200.4}}),
                             rss_bytes=512 * 2**20, restarts=1)
        assert line == ("soak 1:02:05/8:00:00  windows 12 (in soak/w0013)  ok 1000 err 2  last window p50/p99 client "
                        "101/250 ms server 90/200 ms  server rss 512 MiB  restarts 1")

    def test_plain_output_prints_notable_events_as_lines(self) -> None:
        """Off a terminal, a closed window and a restart each print a plain line (no carriage returns)."""
        out = io.StringIO()
        view = SoakView(Bus("soak-view-test"), duration_s=60, stream=out)
        view.show(_window(1, 300))
        view.show(ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason="exited -9"))
        text = out.getvalue()
        assert "\r" not in text
        assert "windows 1 " in text and "server restarting (attempt 1): exited -9" in text and "restarts 1" in text

    def test_a_terminal_gets_the_status_line_redrawn_in_place(self) -> None:
        """On a terminal the status line is a rich live line (drawn with control sequences), notable events
        print above it."""

        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        out = Terminal()
        view = SoakView(Bus("soak-view-test"), duration_s=60, stream=out)
        view.show(_window(1, 300))
        view.show(ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason="exited -9"))
        view.out.end_bar()
        text = out.getvalue()
        assert "\x1b[" in text and "server restarting (attempt 1): exited -9" in text and "windows 1" in text

    def test_clock_counts_time_under_load_not_aiperf_start_ups(self) -> None:
        """Closed windows count their request span, the running one up to now, a finalising one up to its
        last answer; AIPerf start-up gaps do not count. A window closing late keeps the running one named."""
        s = 10**9
        view = SoakView(Bus("soak-view-test"), duration_s=60, stream=io.StringIO())

        def req(window: str, start_s: float, end_s: float) -> RequestCorrelated:
            return RequestCorrelated(request_id=f"{window}-{start_s}", window=window, phase="profiling", ok=True,
                                     request_start_ns=T0 + int(start_s * s), request_end_ns=T0 + int(end_s * s))

        view.show(SoakWindowOpened(window="soak/w0001", index=1, start_unix_ns=T0))
        view.show(req("soak/w0001", 8, 9))  # 8 s of AIPerf start-up before the first request
        view.show(req("soak/w0001", 27, 28))
        assert view.loaded_s(now_ns=T0 + 28 * s) == 20.0
        view.show(SoakWindowOpened(window="soak/w0002", index=2, start_unix_ns=T0 + 30 * s))  # opened ahead
        assert view.loaded_s(now_ns=T0 + 29 * s) == 21.0 and view.window == "soak/w0001"
        view.show(req("soak/w0002", 30, 31))
        assert view.loaded_s(now_ns=T0 + 43 * s) == 33.0  # w0001 finalising (to its last answer), w0002 running
        view.show(req("soak/w0001", 29, 31.5))  # w0001's last answer overlaps w0002's start: counted once
        assert view.loaded_s(now_ns=T0 + 43 * s) == 35.0
        view.show(SoakWindowClosed(window="soak/w0001", index=1, summary=_stats({
            "window": "soak/w0001", "index": 1, "start_unix_ns": T0, "end_unix_ns": T0 + 30 * s,
            "first_request_unix_ns": T0 + 8 * s, "last_request_unix_ns": T0 + int(31.5 * s)})))
        assert view.loaded_s(now_ns=T0 + 43 * s) == 35.0
        assert view.window == "soak/w0002"
        line = format_status(elapsed_s=50, duration_s=60, windows=1, window="soak/w0002", ok=3, errors=0, last=None,
                             rss_bytes=None, restarts=0, loaded_s=view.loaded_s(now_ns=T0 + 43 * s))
        assert line.startswith("soak 0:00:35/0:01:00 under load (wall 0:00:50)  windows 1 (in soak/w0002)")



def test_soak_html_escapes_what_the_journal_says() -> None:
    """soak.html comes from an autoescaped template: a verdict's text cannot inject markup."""
    events = [RunStarted(command="soak", config=make_config(soak={"window_s": 15.0})), _window(1, 300),
              SoakVerdict(metric="server_rss", passed=False, outcome="fail", final=True,
                          reason="<script>alert(1)</script>"), RunFinished(status="failed")]
    html = render_soak_html(fold_soak(events))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert html.startswith("<!DOCTYPE html>")


class TestSoakModelStatus:
    """report.{md,json} of a soak: the model reads as its soak's outcome, never "error" (issue 29)."""

    @staticmethod
    def _report(outcomes: dict[str, str], model_outcome: str) -> str:
        events = [RunStarted(command="soak"),
                  PhaseStarted(source="soak", phase="model", model="m"),
                  PhaseFinished(source="soak", phase="soak", model="m", outcome="passed"),
                  *(SoakVerdict(metric=k, passed=v == "pass", final=True, outcome=v) for k, v in outcomes.items()),
                  PhaseFinished(source="soak", phase="model", model="m", outcome=model_outcome),
                  RunFinished(status="ok")]
        return render_markdown(fold(events))

    def test_a_passing_soak_lists_no_failure(self) -> None:
        """Every final verdict passed: status soak-passed, and the Failures section says none failed."""
        md = self._report({"server_rss": "pass", "restarts": "pass"}, "soak-passed")
        assert "| **soak-passed** |" in md and "## Failures\n\nNone: no soak verdict failed." in md
        assert "error" not in md

    def test_an_inconclusive_soak_is_not_read_as_passed(self) -> None:
        md = self._report({"server_rss": "inconclusive", "restarts": "pass"}, "soak-passed")
        assert "| **soak-inconclusive** |" in md and "None: no soak verdict failed." in md

    def test_a_failed_soak_is_a_failure_with_its_reason(self) -> None:
        md = self._report({"server_rss": "fail", "restarts": "pass"}, "soak-failed")
        assert "### m: soak-failed at soak" in md and "Reason: failed: server_rss" in md


def test_the_plan_said_before_the_load_is_in_the_soak_report() -> None:
    """SoakPhase's plan (what each trend verdict could decide) is listed in soak.md and soak.html and kept in
    soak.json (issue 29)."""
    plan = plan_trends(240, SoakLimits(), 15)
    events = [RunStarted(command="soak"), PhaseStarted(source="soak", phase="soak", detail=SoakPhase(plan=plan)),
              _window(1, 300), RunFinished(status="ok")]
    report = fold_soak(events)
    assert report.plan == plan
    md = render_soak_markdown(report)
    assert "## What the plan could decide (said before the load)" in md
    assert "- server_rss: judges 3.0 min, under the 10 min a slope needs: only growth beyond 64 MiB" in md
    assert "only growth beyond 64 MiB can decide" in render_soak_html(report)


class TestSoakSummary:
    def test_an_interrupted_soak_does_not_promise_exit_0(self, capsys: pytest.CaptureFixture[str]) -> None:
        """After SIGINT the soak exits 130 whatever its verdicts: the summary says so, not "exit 0 unless a verdict
        failed"; an ended soak keeps that line."""
        verdicts = [MetricVerdict(metric="server_rss", outcome="inconclusive", reason="not enough evidence")]
        print_summary(Path("/runs/soak"), verdicts, [], strict=False, interrupted_by="SIGINT", interrupted_exit=130)
        said = capsys.readouterr().err
        assert "INCONCLUSIVE: server_rss: the evidence cannot decide; not failures; SIGINT interrupted the soak, " \
               "which exits 130" in said
        assert "exit 0" not in said
        print_summary(Path("/runs/soak"), verdicts, [], strict=False)
        assert "not failures (exit 0 unless a verdict failed; --strict makes them fail)" in capsys.readouterr().err
