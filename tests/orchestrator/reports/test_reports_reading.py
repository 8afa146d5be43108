"""report.md says what happened in a reader's terms: percentages for gates, the run status a qualify run came
to, only the models asked for, one notice per fact, the server's answer to failed requests, AIPerf's reason in
plain words, restarts with their cause."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from reports_support import qualify_journal

from orchestrator.events import (
    AiperfExited,
    Failed,
    OrphanReaped,
    RequestCorrelated,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    Warned,
)
from orchestrator.reports.fold import fold
from orchestrator.reports.markdown import render_markdown
from orchestrator.reports.text import gate_pct

_BODY = '{"error":{"message":"Input should be a valid string","type":"invalid_request_error","code":"invalid_request"}}'


def _md(events: list[Any]) -> str:
    return render_markdown(fold(events))


def _edited(j: Any, change: Any) -> list[Any]:
    """The journal's events with `change(event)` applied to each (None drops it)."""
    return [x for x in (change(ev) for ev in j.events) if x is not None]


class TestRunStatus:
    def test_a_qualify_whose_models_all_ended_reads_completed(self) -> None:
        """Qualified, unsupported and failed models are all final: the run completed (its exit code stays)."""
        md = _md(qualify_journal().events)
        assert "run status **completed**" in md
        assert "| Exit | failed (code 1)" in md

    def test_a_run_error_keeps_the_status_failed(self) -> None:
        """A Failed notice (the run itself went wrong) leaves the journaled status."""
        j = qualify_journal(finished=False)
        j.add(Failed(code="subscriber", message="the correlator failed"))
        j.add(RunFinished(status="failed", exit_code=1))
        assert "run status **failed**" in _md(j.events)

    def test_a_model_never_reached_keeps_the_status_failed(self) -> None:
        """A model with no result (not-run) means the run stopped short of it."""
        events = _edited(qualify_journal(), lambda ev: None if getattr(ev, "model", "") == "crashy" else ev)
        md = _md(events)
        assert "| crashy |" in md and "not-run" in md and "run status **failed**" in md


class TestModelSelection:
    def test_qualify_model_lists_only_the_chosen_model(self) -> None:
        """`qualify --model ref-ok` on a four-model bench.toml reports ref-ok alone, with no not-run failures."""
        def only_ref_ok(ev: Any) -> Any:
            if isinstance(ev, RunStarted):
                return msgspec.structs.replace(ev, argv=["aqbench", "qualify", "--model", "ref-ok"])
            model = getattr(ev, "model", None)
            return ev if model in (None, "", "ref-ok") else None

        report = fold(_edited(qualify_journal(), only_ref_ok))
        assert [r.model for r in report.rows] == ["ref-ok"]
        assert "not-run" not in render_markdown(report)


class TestFigures:
    def test_gates_read_as_percentages(self) -> None:
        """Required and observed gate rates are percentages, never raw floats."""
        md = _md(qualify_journal().events)
        assert "| min_pass_rate | arm:audio | ≥ 90.0% | 50.0% |" in md
        assert "| min_pass_rate | arm:audio | ≥ 70.0% | 75.0% | yes |" in md
        assert "0.75 " not in md and "| 0.9 |" not in md

    def test_an_observed_rate_never_reads_equal_to_a_different_required_one(self) -> None:
        """89.96 % against a 90 % gate shows its second decimal; equal values show one decimal."""
        assert gate_pct(0.8996, 0.9) == "89.96%"
        assert gate_pct(0.9, 0.9) == "90.0%"
        assert gate_pct(0.9454545454545454, 0.9) == "94.5%"


class TestNotices:
    def test_one_notice_per_fact_beside_the_models_it_concerns(self) -> None:
        """The same warning from the model's sampler and from the reference side (no model) is one row."""
        j = qualify_journal(finished=False)
        for _ in range(2):
            j.add(Warned(code="gpu_sampling_unavailable", message="GPU sampling off: NVML unavailable"))
        j.add(RunFinished(status="failed", exit_code=1))
        assert _md(j.events).count("gpu_sampling_unavailable") == 1


class TestCauses:
    def test_failed_requests_show_the_servers_answer_and_aiperf_in_plain_words(self) -> None:
        """52 requests answered 400 show the server's body once with their count; AIPerf's reason says how it
        ended from the journal's counts, and its own words lose their source location."""
        j = qualify_journal()

        def with_400s(ev: Any) -> Any:
            if isinstance(ev, RequestCorrelated) and ev.request_id.startswith("x"):
                return msgspec.structs.replace(ev, cause="http_4xx", http_status=400, error_message=_BODY,
                                               cause_rule="")
            if isinstance(ev, AiperfExited) and ev.window == "crashy/aiperf":
                return msgspec.structs.replace(ev, reason=(
                    "no ready marker or aggregate after exit (exit code 1); 6 records were streamed; AIPerf "
                    "exited 1: Failed to stop services (system_controller.py:2370)"))
            return ev

        md = _md(_edited(j, with_400s))
        failures = md.split("## Failures", 1)[1].split("## Details", 1)[0]
        assert f"| profiling | http_4xx | 400 | 3 | {_BODY} |" in failures
        assert ("AIPerf ended partial (exit code 1) and wrote no summary files; 3 of 6 profiling requests failed "
                "(http_4xx 3). AIPerf's last error: Failed to stop services") in failures
        assert "system_controller.py" not in failures.split("Reason:", 1)[0] + failures.split("AIPerf ended", 1)[1]

    def test_restarts_name_their_cause(self) -> None:
        """The server line's restart count comes with each restart's journaled reason."""
        md = _md(qualify_journal().events)
        assert "- Restart 1: incarnation 2 started" in md and "because crashed." in md

    def test_a_restart_is_dated_by_its_spawn_or_said_never_made(self) -> None:
        """A restart happened when its incarnation was spawned, not when it was decided (the backoff lies
        between); one decided while the run ended is said so, and not counted as a restart."""
        j = qualify_journal()
        made = next(row.server for row in fold(j.events).rows if row.server.restart_causes)
        [r] = made.restart_causes
        assert made.restarts == 1 and r.spawned_s is not None and r.spawned_s > r.at_s
        assert (f"- Restart 1: incarnation 2 started {r.spawned_s:.1f} s into the run (decided at {r.at_s:.1f} s, "
                "after a 1.0 s backoff), because crashed.") in render_markdown(fold(j.events))
        never = _edited(j, lambda ev: None if isinstance(ev, ServerSpawned) and ev.incarnation == 2 else ev)
        md = _md(never)
        assert [row.server.restarts for row in fold(never).rows if row.server.restart_causes] == [0]
        assert "1 incarnation(s), 0 restart(s)" in md
        assert (f"- Restart 1: restart decided at {r.at_s:.1f} s; the run ended first (incarnation 2 was never "
                "started; its backoff was 1.0 s). It was decided because crashed.") in md


    def test_a_worker_reaped_after_dying_with_its_server_is_counted(self) -> None:
        """An escaped worker that died with its server and was reaped is counted beside the orphans killed (the
        report read "0 orphan(s) killed" while that worker was a zombie)."""
        j = qualify_journal()
        at = next(i for i, ev in enumerate(j.events) if isinstance(ev, ServerRestarting))
        reaped = OrphanReaped(incarnation=1, pid=77, name="python3", returncode=-15, found_by="sample")
        md = _md([*j.events[:at], reaped, *j.events[at:]])
        assert "0 orphan(s) killed, 1 orphan(s) reaped dead (zombies left to aqbench)" in md
        assert "orphan(s) reaped" not in _md(j.events)

    @pytest.mark.parametrize("journaled", ["KeyboardInterrupt", ""])
    def test_a_traceback_from_our_own_stop_signal_is_noted_as_expected(self, journaled: str) -> None:
        """uvicorn re-raising our SIGINT leaves a KeyboardInterrupt traceback, which the supervisor journals as
        the stop's own (ServerExited.stop_traceback): the report says it is the server's handling of the stop it
        was asked for, and lists no unexpected exit. Without that journaled fact the report explains nothing away."""
        tail = ["INFO:     Shutting down", "Traceback (most recent call last):", '  File "uvicorn/server.py"',
                "KeyboardInterrupt"]

        def stopped_by_us(ev: Any) -> Any:
            if isinstance(ev, ServerReady) and ev.pid == 100:
                return [ev, ServerExited(incarnation=1, pid=100, returncode=-2, signal="SIGINT", expected=True,
                                         during="stop", output_tail=tail, stop_traceback=journaled)]
            return ev

        events: list[Any] = []
        for x in _edited(qualify_journal(), stopped_by_us):
            events += x if isinstance(x, list) else [x]
        md = _md(events)
        ref_ok = md.split("### ref-ok\n", 1)[1].split("### no-audio", 1)[0]
        note = ("- Incarnation 1 stopped as aqbench asked (SIGINT); the traceback in its output (KeyboardInterrupt) "
                "is the server's own handling of that signal: expected, not an error.")
        assert (note in ref_ok) == bool(journaled)
        assert "0 unexpected exit(s)" in ref_ok
