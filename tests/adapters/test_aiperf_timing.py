"""aqbench's timing strategy inside real AIPerf 0.13.0: a handover between two AIPerf processes with no gap, no
dropped request, and never more requests open than the target (the file protocol alone: test_aiperf_handover.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from adapters.aiperf import build_command, ensure_tokenizer
from adapters.aiperf.artifacts import judge_artifacts
from adapters.aiperf.command import AiperfCommand
from adapters.aiperf.handover import FileHandover
from adapters.aiperf.records import parse_export_line, parse_tap_line
from orchestrator.config import WorkloadConfig
from orchestrator.events import ClientRecord

STUB = Path(__file__).resolve().parents[1] / "data" / "stub_server.py"
TARGET = 2  # open requests of both processes together


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until(what: str, ok: Callable[[], object], timeout_s: float, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout_s
    while not ok():
        dead = [p.returncode for p in procs if p.poll() is not None]
        # A process may do what was awaited and exit between the two looks: look once more before failing.
        assert (not dead and time.monotonic() < deadline) or ok(), f"waiting for {what}: exits {dead}"
        time.sleep(0.002)


@contextmanager
def _short_dir(prefix: str) -> Iterator[Path]:
    """A folder with a short path, removed after: AIPerf's ZMQ sockets live under TMPDIR (a Unix socket path
    stays under 108 bytes), which pytest's tmp_path can exceed."""
    short = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield short
    finally:
        shutil.rmtree(short, ignore_errors=True)


@contextmanager
def _stub(folder: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(STUB), "--port", str(port), "--records", str(folder / "srv.jsonl"),
                             "--latency-ms", "20"], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _until("the stub server", lambda: _answers(port), 30, [])
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def _answers(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _profiling(folder: Path, *, tap: bool) -> list[ClientRecord]:
    """The profiling records so far: the live tap's lines, or profile_export.jsonl's."""
    files = sorted(folder.glob("tap-*.jsonl")) if tap else [folder / "profile_export.jsonl"]
    parse = parse_tap_line if tap else parse_export_line
    out = []
    for f in files:
        if f.exists():
            out += [parse(line) for line in f.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]
    return [r for r in out if r.phase == "profiling"]


def _most_open(records: list[ClientRecord]) -> int:
    """The most requests open at once, from their start and end times (a start at an end's instant counts after)."""
    edges = sorted([(r.request_end_ns, -1) for r in records] + [(r.request_start_ns, 1) for r in records])  # type: ignore[misc]
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


async def _ready(control: FileHandover) -> int:
    with anyio.fail_after(90):
        return await control.wait_ready()


def _launch(cmd: AiperfCommand) -> subprocess.Popen[bytes]:
    for folder in (cmd.env["TMPDIR"], cmd.env["AQBENCH_TAP_DIR"]):
        Path(folder).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AQBENCH_")}
    return subprocess.Popen(cmd.argv, env={**env, **cmd.env}, cwd=cmd.artifact_dir.rsplit("/", 1)[0],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


@pytest.mark.aiperf
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_handover_between_two_aiperf_processes_drops_nothing_and_keeps_the_target(tmp_path: Path) -> None:
    """The successor, gated at limit 0, gets `go` as the predecessor gets `halt`, and its limit is raised by one
    as each of the predecessor's open requests ends: its first request starts within 1 s of the predecessor's
    last, both runs read complete with every issued request in their export, and the two never have more than
    TARGET open together; the server answered exactly the requests the two exports hold. Both wait for a freed
    slot instead of spinning (AQBENCH_TIMING_WAIT)."""
    with _short_dir("aqtm-") as short:
        _handover(tmp_path, short)


def _handover(tmp_path: Path, short: Path) -> None:
    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"text": f"question {i}"}) + "\n" for i in range(40)))
    workload = WorkloadConfig(warmup_requests=0, requests=100_000, concurrency=TARGET, request_timeout_s=10.0)
    with _stub(tmp_path) as url:
        controls, cmds = [], []
        for name, gated in (("a", False), ("b", True)):
            control = FileHandover(short / name / "handover", gated=gated)
            if gated:
                control.set_limit(0)
            cmd = build_command(workload, base_url=url, model="stub", input_file=rows,
                                artifact_dir=short / name / "artifacts", tokenizer=ensure_tokenizer(),
                                tmp_dir=short / name / "tmp", timing_wait=True, control=control)
            # The duration is a backstop (a halt ends each run); the gate's wait counts toward it.
            controls.append(control)
            cmds.append(cmd.extended(["--benchmark-duration", "120", "--benchmark-grace-period", "10"]))
        a, b = controls
        procs = [_launch(c) for c in cmds]
        try:
            tap_a, tap_b = (Path(c.env["AQBENCH_TAP_DIR"]) for c in cmds)
            anyio.run(_ready, b)
            _until("the predecessor's load", lambda: len(_profiling(tap_a, tap=True)) >= 50, 60, procs)
            assert not _profiling(tap_b, tap=True), "the gated successor sent before `go`"
            a.halt()
            b.go()
            _until("the predecessor's halted file", a.halted, 10, procs)
            halted_a = a.halted()
            assert halted_a is not None
            # The soak's rule: the successor may open one more request as each of the predecessor's ends.
            limit, deadline = 0, time.monotonic() + 30
            while (done := len(_profiling(tap_a, tap=True))) < halted_a.sent:
                if TARGET - (halted_a.sent - done) > limit:
                    limit = TARGET - (halted_a.sent - done)
                    b.set_limit(limit)
                assert time.monotonic() < deadline, f"{done} of the predecessor's {halted_a.sent} requests ended"
                time.sleep(0.002)
            b.set_limit(TARGET)
            # The halted predecessor may already have exited (0, checked below): watch only the successor.
            _until("the successor's load", lambda: len(_profiling(tap_b, tap=True)) >= 50, 60, procs[1:])
            b.halt()
            for proc in procs:
                assert proc.wait(60) == 0
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
    halted_b = b.halted()
    assert halted_b is not None
    runs = [_profiling(Path(c.artifact_dir), tap=False) for c in cmds]
    for cmd, recs, fact in zip(cmds, runs, (halted_a, halted_b), strict=True):
        judged = judge_artifacts(Path(cmd.artifact_dir), returncode=0, stopped_early=False, records=len(recs))
        assert judged.classification == "complete", judged.reason
        assert len(recs) == fact.sent and not any(r.was_cancelled or r.error_code for r in recs)
    served = [json.loads(line)["request_id"] for line in (tmp_path / "srv.jsonl").read_text().splitlines()]
    assert sorted(served) == sorted(r.request_id for r in runs[0] + runs[1])  # the server saw no other request
    last_a = max(r.request_start_ns for r in runs[0])  # type: ignore[type-var]
    first_b = min(r.request_start_ns for r in runs[1])  # type: ignore[type-var]
    last_end_a = max(r.request_end_ns for r in runs[0])  # type: ignore[type-var]
    print(f"handover: predecessor sent {halted_a.sent}, successor {halted_b.sent}; successor's first start "
          f"{(first_b - last_a) / 1e6:.1f} ms after the predecessor's last start, {(first_b - last_end_a) / 1e6:.1f} ms "
          f"after its last end; most open together {_most_open(runs[0] + runs[1])}")
    assert 0 < first_b - last_a < 1e9, (first_b - last_a) / 1e6
    assert halted_a.unix_ns <= first_b
    assert _most_open(runs[0] + runs[1]) <= TARGET


@pytest.mark.aiperf
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_skipped_gated_phases_send_nothing_and_the_run_ends_complete(tmp_path: Path) -> None:
    """Four loads in one real AIPerf process, the last three gated: a (not gated) halted once a few of its 40
    requests are in, b skipped, c run, d skipped (the last phase). AIPerf exits 0; a ends early with every request
    it sent recorded (its manifest count equals its records, fewer than planned); every other phase that ran has
    all its records, the skipped ones none; the run reads complete, and AIPerf's manifest says 0 for the skipped
    phases."""
    with _short_dir("aqgt-") as short:
        _gated(tmp_path, short)


def _gated(tmp_path: Path, short: Path) -> None:
    from adapters.aiperf.gates import FileGates
    from adapters.aiperf.phases import phased_command
    from orchestrator.spine.ports import PhaseLoad

    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"session_id": f"s{i}", "text": f"question {i}"}) + "\n" for i in range(40)))
    loads = [PhaseLoad(name=n, requests=40 if n == "a" else 5, warmup=2, rate=20.0) for n in ("a", "b", "c", "d")]
    gates = FileGates(short / "gates", ["b", "c", "d"])
    with _stub(tmp_path) as url:
        one = build_command(WorkloadConfig(request_timeout_s=10.0), base_url=url, model="stub", input_file=rows,
                            artifact_dir=short / "artifacts", tokenizer=ensure_tokenizer(), tmp_dir=short / "tmp",
                            request_rate=20.0)
        cmd = phased_command(one, loads, short / "batch", env=gates.env())
        proc = _launch(cmd)
        try:
            tap = Path(cmd.env["AQBENCH_TAP_DIR"])
            _until("a's first requests", lambda: len(_profiling(tap, tap=True)) >= 3, 90, [proc])
            gates.halt("a")
            _until("a's halt", lambda: gates.halted("a") is not None, 30, [proc])
            for name, run in (("b", False), ("c", True), ("d", False)):
                _until(f"the gate of {name}", lambda n=name: gates.reached(n), 90, [proc])  # type: ignore[misc]
                gates.decide(name, run=run)
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    art = Path(cmd.artifact_dir)
    recs = [json.loads(line) for line in (art / "profile_export.jsonl").read_text().splitlines()]
    names = sorted(r["metadata"]["phase_name"] for r in recs)
    sent_a = gates.halted("a")
    assert sent_a is not None
    assert 3 <= sent_a < 40 and names.count("a") == sent_a, (sent_a, names)
    assert [n for n in names if n != "a"] == sorted(["warmup_a"] * 2 + ["warmup_c"] * 2 + ["c"] * 5), names
    judged = judge_artifacts(art, returncode=0, stopped_early=False, records=len(recs))
    assert judged.classification == "complete", judged.reason
    phases = judged.aggregate["phases"]
    assert all(phases[p]["total"] == 0 for p in ("warmup_b", "b", "warmup_d", "d")), phases
    assert phases["c"]["total"] == 5 and phases["a"]["total"] == sent_a
