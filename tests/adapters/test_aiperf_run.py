"""run_aiperf's process handling against a scripted stand-in executable: records streamed from both
sources, exit judged by files, deadline -> SIGINT, SIGKILL after the grace, nonzero exit, torn tail."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from adapters.aiperf.command import AiperfCommand
from adapters.aiperf.run import run_aiperf
from orchestrator.events import AiperfExited, AiperfStarted, ClientRecord, LogLine, Warned
from orchestrator.spine.bus import Bus

FAKE = Path(__file__).resolve().parents[1] / "data" / "fake_aiperf.py"
# A stand-in for AIPerf, no server: these run beside the serial lane (tests/conftest.py).
pytestmark = pytest.mark.inprocess


def _cmd(tmp_path: Path, mode: str, *, tap: bool = True) -> AiperfCommand:
    art = tmp_path / "art"
    argv = [sys.executable, str(FAKE), "profile", "--artifact-dir", str(art)]
    env = {"FAKE_MODE": mode, "TMPDIR": str(tmp_path / "tmp")}
    if tap:
        env["AQBENCH_TAP_DIR"] = str(tmp_path / "tap")
    return AiperfCommand(argv=argv, env=env, shell="fake", artifact_dir=str(art), input_file="")


async def _run(cmd: AiperfCommand, **kw) -> tuple[object, list]:
    bus = Bus("t")
    async with anyio.create_task_group() as tg:
        sub = bus.subscribe("probe", size=100_000, lossy=True)
        outcome = await run_aiperf(cmd, bus, window="w", **kw)
        events = []
        while True:
            try:
                events.append(sub.receive_nowait())
            except anyio.WouldBlock:
                break
        sub.close()
        tg.cancel_scope.cancel()
    return outcome, events


class TestRunAiperf:
    @pytest.mark.anyio
    async def test_aiperfs_own_reason_when_every_request_failed(self, tmp_path: Path) -> None:
        """AIPerf exits 1 saying "All 5 inference request(s) failed": the outcome says so, not only that
        no ready marker was written (its error line is quoted even when later lines follow it)."""
        outcome, events = await _run(_cmd(tmp_path, "all_failed"))
        assert outcome.returncode == 1 and outcome.classification == "partial"
        assert "AIPerf exited 1: All 5 inference request(s) failed; no successful responses were collected." \
            in outcome.reason
        # Each request arrived through the tap and the export: 5 requests' records, not 10 records.
        assert outcome.records["tap"] == outcome.records["export"] == 5
        assert "no ready marker or aggregate after exit (exit code 1); the records of 5 request(s) were streamed" \
            in outcome.reason
        assert isinstance(events[-1], AiperfExited) and "All 5 inference request(s) failed" in events[-1].reason

    @pytest.mark.anyio
    async def test_complete_run_streams_both_sources(self, tmp_path: Path) -> None:
        """Five records arrive once through the tap and once through the export; the run is complete."""
        outcome, events = await _run(_cmd(tmp_path, "ok"))
        recs = [e for e in events if isinstance(e, ClientRecord)]
        assert sorted(r.via for r in recs) == ["export"] * 5 + ["tap"] * 5
        assert {r.request_id for r in recs if r.via == "tap"} == {r.request_id for r in recs if r.via == "export"}
        assert outcome.classification == "complete" and outcome.returncode == 0
        assert any(isinstance(e, LogLine) and e.level == "info" for e in events)
        assert isinstance(events[0], AiperfStarted) and isinstance(events[-1], AiperfExited)

    @pytest.mark.anyio
    async def test_on_exit_fires_once_when_the_process_ends_before_judging(self, tmp_path: Path) -> None:
        """`on_exit` is the next soak window's cue: called once per run, the process having ended (its
        files then still to be judged); also when the deadline stopped the process."""
        for mode, kw in (("ok", {}), ("slow_sigint", {"deadline_s": 0.6, "stop_grace_s": 5})):
            calls: list[int] = []
            outcome, _ = await _run(_cmd(tmp_path / mode, mode), on_exit=lambda calls=calls: calls.append(1), **kw)
            assert calls == [1], mode
            assert outcome.returncode is not None

    @pytest.mark.anyio
    async def test_inputs_json_trimmed_once_ended_unless_kept(self, tmp_path: Path) -> None:
        """Once AIPerf has ended its inputs.json gives way to the note; a command with keep_inputs keeps it."""
        for keep in (False, True):
            cmd = msgspec.structs.replace(_cmd(tmp_path / str(keep), "ok"), keep_inputs=keep)
            (tmp_path / str(keep) / "art").mkdir(parents=True)
            (tmp_path / str(keep) / "art" / "inputs.json").write_text('{"data": []}')
            outcome, _ = await _run(cmd)
            assert outcome.classification == "complete"
            names = {p.name for p in (tmp_path / str(keep) / "art").iterdir()}
            assert ("inputs.json" in names, "inputs.json.removed" in names) == (keep, not keep), names

    @pytest.mark.anyio
    async def test_nonzero_exit_without_files_is_failed(self, tmp_path: Path) -> None:
        """AIPerf exiting 1 before any request is 'failed' and the reason quotes its last output."""
        outcome, _ = await _run(_cmd(tmp_path, "fail"))
        assert outcome.classification == "failed" and outcome.returncode == 1
        assert "bad flag --nope" in outcome.reason

    @pytest.mark.anyio
    async def test_deadline_sends_sigint_and_run_is_cancelled(self, tmp_path: Path) -> None:
        """Past the deadline the group gets SIGINT; the stand-in writes its files; classified cancelled."""
        outcome, events = await _run(_cmd(tmp_path, "slow_sigint"), deadline_s=0.6, stop_grace_s=5)
        assert outcome.classification == "cancelled" and outcome.returncode == 0
        assert any(isinstance(e, Warned) and e.code == "aiperf_deadline" for e in events)
        assert outcome.records["export"] >= 5

    @pytest.mark.anyio
    async def test_sigkill_after_grace(self, tmp_path: Path) -> None:
        """A process ignoring SIGINT is killed after the grace period, and the run still ends."""
        with anyio.fail_after(20):
            outcome, _ = await _run(_cmd(tmp_path, "ignore_sigint"), deadline_s=0.5, stop_grace_s=0.5)
        assert outcome.returncode == -9 and outcome.classification == "cancelled"

    @pytest.mark.anyio
    async def test_torn_last_line_is_warned_not_lost_silently(self, tmp_path: Path) -> None:
        """A half-written last line and no ready marker: partial, and the bad line is a warning event."""
        outcome, events = await _run(_cmd(tmp_path, "torn", tap=False))
        assert outcome.classification == "partial" and outcome.records["bad_lines"] == 1
        assert [e.code for e in events if isinstance(e, Warned)] == ["aiperf_bad_record_line"]

    @pytest.mark.anyio
    async def test_cancellation_stops_the_process_and_journals_exit(self, tmp_path: Path) -> None:
        """Cancelling the caller SIGINTs the group, reaps it and still publishes AiperfExited(cancelled)."""
        bus = Bus("t")
        sub = bus.subscribe("probe", size=100_000, lossy=True)
        with anyio.move_on_after(0.8):
            await run_aiperf(_cmd(tmp_path, "slow_sigint"), bus, window="w", stop_grace_s=5)
        events = []
        while True:
            try:
                events.append(sub.receive_nowait())
            except anyio.WouldBlock:
                break
        sub.close()
        [exited] = [e for e in events if isinstance(e, AiperfExited)]
        assert exited.classification == "cancelled" and exited.returncode == 0
        assert msgspec.json.decode(msgspec.json.encode(exited), type=AiperfExited) == exited


class TestIssuedCounts:
    def test_sending_complete_line_gives_the_phase_and_its_sent_count(self) -> None:
        """AIPerf 0.13.0's line, thousands separators included; other lines give nothing."""
        from adapters.aiperf.sent import parse_sent

        line = ("19:30:01.123 NOTICE   Phase profiling (profiling) sending complete | sent=1,204, completed=1,200, "
                "in_flight=4 | sessions: sent=10, completed=9")
        assert parse_sent(line) == ("profiling", 1204)
        assert parse_sent("Phase warmup (warmup) sending complete | sent=2, completed=2, in_flight=0") == ("warmup", 2)
        assert parse_sent("Phase profiling (profiling) complete | completed=12, cancelled=0, errors=2") is None
        assert parse_sent("sending complete, but not AIPerf's line") is None

    def test_the_log_wins_over_the_manifest_which_fills_what_the_log_left(self) -> None:
        from adapters.aiperf.sent import issued_counts

        manifest = {"warmup": {"total": 2}, "profiling": {"total": 10}}
        assert issued_counts({"profiling": 12}, manifest) == ({"profiling": 12, "warmup": 2},
                                                               {"profiling": "aiperf_log", "warmup": "phase_manifest"})
        assert issued_counts({}, None) == ({}, {})

    @pytest.mark.anyio
    async def test_a_run_that_lost_records_still_says_what_it_sent(self, tmp_path: Path) -> None:
        """No manifest, 5 records, a log saying 7 were sent: the outcome's issued count is the log's 7."""
        outcome, events = await _run(_cmd(tmp_path, "lost"))
        assert outcome.records["export"] == 5 and not (tmp_path / "art" / "phase_manifest.json").exists()
        assert (outcome.issued, outcome.issued_from) == ({"profiling": 7}, {"profiling": "aiperf_log"})
        assert events[-1].aggregate["issued"] == {"profiling": 7}

    @pytest.mark.anyio
    async def test_a_complete_run_issued_what_it_recorded(self, tmp_path: Path) -> None:
        outcome, _ = await _run(_cmd(tmp_path, "ok"))
        assert outcome.issued == {"profiling": 5} and outcome.records["export"] == 5
