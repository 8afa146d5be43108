"""Report defects found by drills: journal replay (duplicate seq, empty journal), interrupted headers,
plans, run-aiperf runs, per-kind flags, reproduce commands and number formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from config_support import make_config
from reports_support import qualify_journal

from orchestrator.events import ModelPhase, ResultRow, RunFinished


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator", "report", *args], capture_output=True, text=True,
                          timeout=60)


class TestJournalReplay:
    def test_a_duplicated_line_is_corruption_named_by_file_and_line(self, tmp_path: Path) -> None:
        """A line written twice would count its request twice: `aqbench report` exits 3 naming the line."""
        journal = qualify_journal().write(tmp_path / "run" / "events.jsonl")
        lines = journal.read_bytes().splitlines(keepends=True)
        lines.insert(41, lines[40])  # line 42 repeats line 41
        journal.write_bytes(b"".join(lines))
        proc = _report(str(journal.parent), "--out", str(tmp_path / "out"))
        assert proc.returncode == 3, proc.stdout
        assert f"{journal}:42: corrupt journal: seq 41 repeats line 41's; a line was duplicated" in proc.stderr
        assert not (tmp_path / "out" / "report.json").exists()

    def test_a_duplicated_last_line_is_caught_too(self, tmp_path: Path) -> None:
        journal = qualify_journal().write(tmp_path / "run" / "events.jsonl")
        lines = journal.read_bytes().splitlines(keepends=True)
        journal.write_bytes(b"".join([*lines, lines[-1]]))
        proc = _report(str(journal))
        assert proc.returncode == 3 and f"{journal}:{len(lines) + 1}: corrupt journal: seq" in proc.stderr

    def test_runs_merged_by_ingest_keep_their_own_order(self, tmp_path: Path) -> None:
        """Two runs' events in one file (`aqbench ingest --out`) each keep their own seq: no corruption."""
        import msgspec

        from orchestrator.spine.journal import encode_event, read_journal

        a = qualify_journal().events[:20]
        b = [msgspec.structs.replace(e, run_id="other-run") for e in a]
        path = tmp_path / "events.jsonl"
        path.write_bytes(b"".join(encode_event(e) + b"\n" for pair in zip(a, b, strict=True) for e in pair))
        events, _ = read_journal(path)
        assert len(events) == 40

    def test_an_empty_journal_exits_2(self, tmp_path: Path) -> None:
        (tmp_path / "events.jsonl").write_bytes(b"")
        proc = _report(str(tmp_path))
        assert proc.returncode == 2, proc.stdout
        assert f"{tmp_path / 'events.jsonl'}: the journal is empty" in proc.stderr
        assert not (tmp_path / "report.json").exists()


ROOT = Path(__file__).resolve().parents[3]


class TestPlan:
    def test_plan_exits_0_planned_and_says_what_would_run(self, tmp_path: Path) -> None:
        """`qualify --plan` is no failure: exit 0, run status planned, and the report lists the server
        command, the stages and the request counts instead of a Failures entry."""
        from orchestrator.spine.journal import read_journal

        config = tmp_path / "bench.toml"
        config.write_text((ROOT / "bench.toml").read_text())
        proc = subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", "qualify", "--plan",
                               "--config", str(config)], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr[-2000:]
        [run_dir] = list((tmp_path / "runs").iterdir())
        events, _ = read_journal(run_dir / "events.jsonl")
        assert isinstance(events[-1], RunFinished) and (events[-1].status, events[-1].exit_code) == ("planned", 0)
        md = (run_dir / "report.md").read_text()
        assert "run status **planned**" in md
        plan = md[md.index("## Plan"):md.index("## Failures")]
        assert "would start `" in plan and "-m adapters.reference" in plan
        assert "capability (" in plan and "correctness (" in plan and "HTTP" in plan
        assert "aiperf (4 warmup + 48 profiling requests at concurrency 2" in plan
        assert "never asks" not in plan  # 48 rows dealt by kind reach every gated kind
        failures = md[md.index("## Failures"):md.index("## Details")]
        assert "planned" not in failures and "None." in failures
        assert "would start" in proc.stderr  # the console says it too


class TestUnreachableGates:
    def test_a_plan_that_cannot_reach_a_gated_kind_says_which(self, tmp_path: Path) -> None:
        """AIPerf sends rows in file order, warmup first: with fewer profiling requests than kinds, the plan
        names the gated kinds no request reaches (they will be not applicable under load, never failed); the
        rows dealt by kind reach every kind from 17 requests on, and an arm gate off the load's arms is named."""
        import msgspec

        from orchestrator.config import CorrectnessCriteria, WorkloadConfig
        from orchestrator.dataset import load_dataset, prepare_arms
        from orchestrator.qualify.plan import aiperf_rows, unreachable_gates

        ds = load_dataset(ROOT / "datasets" / "audioqa-v2")
        requests = prepare_arms(ds, ["audio"], tmp_path)
        criteria = CorrectnessCriteria(min_pass_rate=0.9, min_pass_rate_by_kind={"count": 1.0, "language": 0.1})
        workload = WorkloadConfig(warmup_requests=4, requests=8)
        rows = aiperf_rows(requests, ds, workload)
        sent = {ds.item(r.item_id).kind for r in rows[4:12]}
        want = [f"kind:{k}" for k in ("count", "language") if k not in sent]
        assert want and unreachable_gates(rows, ds, workload, criteria) == want
        enough = msgspec.structs.replace(workload, requests=17)
        assert unreachable_gates(aiperf_rows(requests, ds, enough), ds, enough, criteria) == []
        silence = msgspec.structs.replace(workload, arms=["silence"])
        assert unreachable_gates(aiperf_rows(prepare_arms(ds, ["silence"], tmp_path, conditioning_items=20), ds,
                                             silence), ds, silence, criteria)[0] == "arm:audio"


def _markdown(events: list) -> str:
    from orchestrator.reports import fold, render_markdown

    return render_markdown(fold(events))


class TestHeaderAndRows:
    def test_interrupted_header_says_no_run_finished_only_without_one(self) -> None:
        j = qualify_journal(finished=False)
        assert "run status **INTERRUPTED (no RunFinished)**" in _markdown(j.events)
        j.add(RunFinished(status="interrupted", exit_code=130, reason="interrupted by SIGINT"))
        md = _markdown(j.events)
        assert "run status **interrupted**" in md and "no RunFinished" not in md

    def test_a_kind_at_zero_behind_a_passing_overall_gate_is_shown_and_flagged(self) -> None:
        """The overall audio gate passes at 2/4 while kind `pitch` is 0/2: the kind gets its own line under
        the gate and a flag under the results."""
        from reports_support import _Journal, _result, _verdicts

        from orchestrator.events import GateEvaluated, PhaseStarted, RunStarted

        j = _Journal()
        j.add(RunStarted(command="qualify", config=make_config(models=[{"name": "m"}])))
        j.add(PhaseStarted(phase="model", model="m"))
        _verdicts(j, "m", {("i1", "audio"): "correct", ("i2", "audio"): "correct", ("i3", "audio"): "wrong",
                           ("i4", "audio"): "wrong"})
        j.add(GateEvaluated(model="m", gate="min_pass_rate", scope="arm:audio", required=0.5, observed=0.5,
                            passed=True))
        _result(j, "m", "aiperf-qualified")
        j.add(RunFinished(status="ok"))
        md = _markdown(j.events)
        assert "- m: kind `pitch` 0/2 correct on the audio arm (no gate of its own; the overall gate passed)" in md
        assert "| ↳ kind pitch | kind:pitch | – | 0.0% (0/2) | not gated; NONE CORRECT |" in md
        assert "| ↳ kind content | kind:content | – | 100.0% (2/2) | not gated |" in md

    def test_no_client_lifecycle_row_that_only_repeats_request_latency(self) -> None:
        md = _markdown(qualify_journal().events)
        assert "client request_latency" in md and "client lifecycle" not in md


class TestRunAiperfRows:
    def test_a_one_model_command_lists_only_its_model_with_incarnations_and_restarts(self) -> None:
        """A run-aiperf journal of a config with two models: one row (the served model), its two
        incarnations and one restart, the status AIPerf's run came to; no "never reached" row."""
        from reports_support import _Journal

        from orchestrator.events import (
            ModelResult,
            PhaseFinished,
            PhaseStarted,
            RunStarted,
            ServerExited,
            ServerRestarting,
            ServerSpawned,
        )
        from orchestrator.reports import fold

        j = _Journal()
        j.add(RunStarted(command="run-aiperf", config=make_config(models=[{"name": "a"}, {"name": "b"}])))
        j.add(PhaseStarted(phase="model", model="a", detail=ModelPhase(checkpoint="org/a")))
        j.add(ServerSpawned(incarnation=1, pid=10, argv=["srv"]))
        j.add(PhaseStarted(phase="aiperf", model="a"))
        j.add(ServerExited(incarnation=1, pid=10, returncode=-9, signal="SIGKILL", during="run"))
        j.add(ServerRestarting(incarnation=2, attempt=1, backoff_s=0.2))
        j.add(ServerSpawned(incarnation=2, pid=11, argv=["srv"]))
        j.add(PhaseFinished(phase="aiperf", model="a", outcome="failed", reason="3 of 12 failed"))
        j.add(ModelResult(model="a", status="aiperf-partial", failed_stage="aiperf",
                          row=ResultRow(checkpoint="org/a", reason="3 of 12 failed")))
        j.add(PhaseFinished(phase="model", model="a", outcome="aiperf-partial"))
        j.add(RunFinished(status="failed", exit_code=1))
        [row] = fold(j.events).rows
        assert (row.model, row.status, row.failed_stage, row.checkpoint) == ("a", "aiperf-partial", "aiperf", "org/a")
        assert (row.server.incarnations, row.server.restarts, len(row.server.unexpected_exits)) == (2, 1, 1)
