"""End to end: `aqbench run-aiperf` with real AIPerf 0.13.0 against the reference server, judged
from the run's journal (clean run, injected 500s and delays, server killed mid-run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reference_run import REFERENCE_ARGV, CleanRun, aqbench, only_run, write_config

from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfStarted,
    OrphanKilled,
    RequestCorrelated,
    RequestsInFlight,
    ServerExited,
)
from orchestrator.spine.journal import read_journal

# Each test is one real AIPerf run plus a reference server: minutes on a busy 2-core box.
pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(480)]

# Crashes restart quickly, so that the requests after one meet a server again.
_RESTART = """
[server.restart]
policy = "on-failure"
max_restarts = 5
backoff_s = 0.2
"""


def _run(tmp_path: Path, *, requests: int, arms: tuple[str, ...], faults: list[str]) -> tuple[int, list, str]:
    config = write_config(tmp_path / "bench.toml", out=tmp_path / "runs", name="e2e", argv=[*REFERENCE_ARGV, *faults],
                          server_extra=_RESTART, requests=requests, arms=arms)
    proc = aqbench("run-aiperf", "--config", str(config), timeout=450)
    run_dir = only_run(tmp_path / "runs")
    events, torn = read_journal(run_dir / "events.jsonl")
    assert not torn
    return proc.returncode, events, proc.stderr


def _of(events: list, kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def _server_statuses(events: list) -> list[int]:
    from orchestrator.events import ServerRecord

    return [e.status for e in _of(events, ServerRecord)]


def _timeline(events: list) -> str:
    """Exits and failed requests in journal order: what a failing crash test needs to be read from CI."""
    lines = []
    for e in events:
        if isinstance(e, ServerExited):
            lines.append(f"exit inc={e.incarnation} expected={e.expected} ts={e.ts_ns} at={e.exited_unix_ns} seq={e.seq}")
        elif isinstance(e, RequestsInFlight):
            lines.append(f"in-flight inc={e.incarnation} ids={e.request_ids} seq={e.seq}")
        elif isinstance(e, RequestCorrelated) and not e.ok:
            lines.append(f"request {e.request_id[:8]} {e.phase} {e.cause}/{e.cause_rule} start={e.request_start_ns} "
                         f"end={e.request_end_ns} inc={e.incarnation} seq={e.seq} {e.error_message[:60]!r}")
    return "\n".join(lines)


def test_clean_run_every_request_correlated(aa_runs: tuple[CleanRun, CleanRun]) -> None:
    """Every request is joined, server model_call_ms < client latency, the accounting balances. The run is the
    first of tests/conftest.py's clean A/A pair (40 requests over both arms), which compare's test
    reads too: one server and AIPerf start-up fewer than a run of its own."""
    run = aa_runs[0]
    assert run.returncode == 0, run.stderr[-3000:]
    events, torn = read_journal(run.dir / "events.jsonl")
    assert not torn
    [exited] = _of(events, AiperfExited)
    assert exited.classification == "complete"
    # AIPerf ran with aqbench's no-spin timing ([workload] timing = "wait", the default).
    assert all("AQBENCH_TIMING_WAIT=1" in e.shell for e in _of(events, AiperfStarted))
    [acc] = _of(events, AccountingChecked)
    assert acc.balanced and acc.issued == {"warmup": 2, "profiling": 40} and acc.expected == acc.issued
    # AIPerf's count is its own log's (requests sent), not the manifest's (records kept).
    assert acc.expected_from == {"warmup": "aiperf_log", "profiling": "aiperf_log"}
    corr = _of(events, RequestCorrelated)
    assert len(corr) == 42 and len({c.request_id for c in corr}) == 42
    for c in corr:
        assert c.ok and c.has_server and c.item_id and c.arm in ("audio", "transcript"), c
        assert c.model_call_ms is not None and c.model_call_ms < c.request_latency_ms
        assert c.timing_scope == "public_task_call_wall" and c.answer
    assert {c.arm for c in corr} == {"audio", "transcript"}
    assert "accounting: balanced" in run.stderr


def test_injected_errors_and_delays_counted_by_cause(tmp_path: Path) -> None:
    """With a 25% injected 500 rate and added latency, http_5xx equals the server's 500s exactly."""
    rc, events, _stderr = _run(tmp_path, requests=12, arms=("transcript",),
                              faults=["--fault-error-rate", "0.25", "--fault-latency-ms", "150"])
    [acc] = _of(events, AccountingChecked)
    assert acc.balanced, acc.problems
    statuses = _server_statuses(events)
    assert statuses.count(500) == 14 // 4 and len(statuses) == 14
    total = {k: acc.by_cause["warmup"].get(k, 0) + acc.by_cause["profiling"].get(k, 0) for k in ("ok", "http_5xx")}
    assert total == {"ok": 14 - statuses.count(500), "http_5xx": statuses.count(500)}
    assert all(c.model_call_ms >= 150 for c in _of(events, RequestCorrelated) if c.ok)
    [exited] = _of(events, AiperfExited)
    assert exited.classification == "partial" and rc == 1


def test_server_killed_mid_run_accounts_in_flight_as_crash(tmp_path: Path) -> None:
    """A server dying mid-run: its in-flight requests are server_crash, AIPerf is partial and survives the
    orphan sweep, and every request AIPerf sent is accounted, by id and against its own count."""
    # 300 ms per answer at concurrency 2: when the 5th answer ends the server, another request is open.
    rc, events, stderr = _run(tmp_path, requests=12, arms=("transcript",), faults=["--fault-crash-after", "5",
                                                                          "--fault-latency-ms", "300"])
    crashes = [e for e in _of(events, ServerExited) if not e.expected]
    assert crashes, stderr[-3000:]
    # The sweep after the crash once killed AIPerf itself: its setproctitle blanks the owner mark in its
    # environment. It must be left alone, run to its end and keep every record.
    [started] = _of(events, AiperfStarted)
    assert started.pid not in {o.pid for o in _of(events, OrphanKilled)}, _timeline(events)
    [exited] = _of(events, AiperfExited)
    assert exited.returncode == 0 and exited.classification == "partial" and rc == 1, (exited, rc)
    [acc] = _of(events, AccountingChecked)
    assert acc.balanced, (acc.problems, _timeline(events))
    assert acc.issued == acc.expected == {"warmup": 2, "profiling": 12}
    assert acc.expected_from == {"warmup": "aiperf_log", "profiling": "aiperf_log"}
    crashed = [e for e in _of(events, RequestCorrelated) if e.cause == "server_crash"]
    listed = {rid for e in _of(events, RequestsInFlight) for rid in e.request_ids}
    assert crashed and {e.request_id for e in crashed} == listed, _timeline(events)
    # In flight = started before the exit was noticed; later requests were refused (connection).
    assert all(e.request_start_ns <= crashes[0].ts_ns and e.incarnation == crashes[0].incarnation for e in crashed)
    refused = [e for e in _of(events, RequestCorrelated) if e.request_start_ns > crashes[0].ts_ns and not e.ok]
    assert all(e.cause == "connection" for e in refused)
    # Every request AIPerf recorded is accounted, by id.
    run_dir = only_run(tmp_path / "runs")
    export = (run_dir / "aiperf" / "artifacts" / "profile_export.jsonl").read_text().splitlines()
    exported = {json.loads(line)["metadata"]["x_request_id"] for line in export if line.strip()}
    accounted = {e.request_id for e in _of(events, RequestCorrelated)}
    assert exported == accounted and len(accounted) == 14, (exported ^ accounted)
    # run-aiperf writes report.* like every run; its one row has the journal's incarnations and restarts.
    from orchestrator.reports import load_report

    assert run_dir.name.startswith("e2e-")  # [run] name is set here
    report = load_report(run_dir / "report.json")
    [row] = report.rows
    assert (row.model, row.status, row.failed_stage) == ("reference-audioqa", "aiperf-partial", "aiperf")
    assert row.server.incarnations >= 2 and row.server.restarts >= 1
    assert (run_dir / "report.md").is_file() and (run_dir / "report.html").is_file()
    assert "the run ended before this model was reached" not in (run_dir / "report.md").read_text()
