"""Reports fold a qualify journal into exact result rows and rebuild report.json/md/html from it alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from config_support import make_config

from orchestrator.errors import JournalError
from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfPhase,
    AiperfSettings,
    AiperfStarted,
    AnswerMismatch,
    AnyEvent,
    CapabilityProbed,
    CorrectnessPhase,
    DatasetPhase,
    GateEvaluated,
    GpuSampled,
    HostFacts,
    HttpExchange,
    ModelPhase,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RequestUnmatched,
    ResourceSampled,
    ResultRow,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerPhase,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    SoakWindowClosed,
    TransportEvidence,
    VerdictReached,
    Warned,
    WindowStats,
)
from orchestrator.journal import decode_event, encode_event
from orchestrator.reports import build_report, encode_report, fold, load_report, write_reports
from orchestrator.reports.fold import MAX_POINTS

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000
MODELS = ["ref-ok", "no-audio", "weak", "crashy"]
ITEMS = {"i1": "content", "i2": "content", "i3": "pitch", "i4": "pitch"}  # i1, i2 have speech


class _Journal:
    """Builds a journal the way the bus would stamp it: increasing seq and ts_ns."""

    def __init__(self) -> None:
        self.events: list[AnyEvent] = []
        self.t = T0

    def add(self, ev: Any, *, at: int | None = None) -> None:
        self.t = at if at is not None else self.t + S // 100
        stamped = msgspec.structs.replace(ev, run_id="run-fixture", seq=len(self.events) + 1,
                                          ts_ns=self.t, mono_ns=self.t - T0)
        # Through the journal's own encoding, as a real run's events are: payload dicts become Structs.
        self.events.append(decode_event(encode_event(stamped)))

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(encode_event(e) + b"\n" for e in self.events))
        return path


def _server(j: _Journal, m: str, pid: int) -> None:
    j.add(PhaseStarted(phase="server", model=m))
    j.add(ServerSpawned(incarnation=1, pid=pid, argv=["python", "-m", "adapters.reference", "--model-name", m]))
    j.add(ServerReady(incarnation=1, pid=pid, startup_ns=1_500_000_000, models=[{"id": m}]))
    for rss in (100, 150, 120):
        j.add(ResourceSampled(incarnation=1, pid=pid, rss_bytes=rss * 2**20))
    j.add(PhaseFinished(phase="server", model=m, outcome="passed",
                        detail=ServerPhase(bundle_sha256="b" * 64, argv=["srv", m])))


def _capability(j: _Journal, m: str) -> None:
    j.add(PhaseStarted(phase="capability", model=m))
    for check in ("transport", "conditioning", "text_only", "transcription_only"):
        j.add(CapabilityProbed(model=m, check=check, passed=True))  # type: ignore[arg-type]
    j.add(PhaseFinished(phase="capability", model=m, outcome="passed"))


def _verdicts(j: _Journal, m: str, table: dict[tuple[str, str], str]) -> None:
    for (item, arm), verdict in table.items():
        j.add(VerdictReached(model=m, path="http", item_id=item, arm=arm, verdict=verdict,  # type: ignore[arg-type]
                             answer="friday" if verdict == "wrong" else "thursday", gold="thursday",
                             item_kind=ITEMS[item], scoring="exact", request_id=f"{m}-{item}-{arm}"))


def _request(j: _Journal, window: str, rid: str, *, phase: str, start_s: float, latency: float | None,
             ok: bool = True, cause: str = "ok", handler: float | None = None, model_call: float | None = None,
             lifecycle: float | None = None, rule: str = "") -> None:
    start = T0 + int(start_s * S)
    end = start + int((latency or 1.0) * 1_000_000)
    j.add(RequestCorrelated(request_id=rid, window=window, phase=phase, item_id="i1", arm="audio", ok=ok,  # type: ignore[arg-type]
                            cause=cause, answer="thursday" if ok else None, request_start_ns=start,  # type: ignore[arg-type]
                            request_end_ns=end, request_latency_ms=latency, client_lifecycle_ms=lifecycle,
                            handler_ms=handler, model_call_ms=model_call,
                            timing_scope="public_task_call_wall" if model_call is not None else "",
                            audio_seconds=2.0 if ok else None, incarnation=1, cause_rule=rule), at=max(end, j.t + 1))


def _result(j: _Journal, m: str, status: str, stage: str = "", reason: str = "") -> None:
    j.add(ModelResult(model=m, status=status, failed_stage=stage, row=ResultRow(
        checkpoint=f"org/{m}", profile=f"{m}-profile", revision="r1", family="audioqa",
        native_task="AudioQA", precision="bf16", bundle_sha256="b" * 64,
        qualify_command=f"aqbench qualify --config bench.toml --model {m}",
        aiperf_command=f"aiperf profile --model {m} --concurrency 2", reason=reason)))
    j.add(PhaseFinished(phase="model", model=m, outcome=status))


def qualify_journal(*, finished: bool = True) -> _Journal:
    """Four models: aiperf-qualified, unsupported at capability, failed at correctness, failed at aiperf."""
    j = _Journal()
    j.add(RunStarted(command="qualify", argv=["aqbench", "qualify"], config_path="/w/bench.toml",
                     config_sha256="f" * 64,
                     config=make_config(models=[{"name": m, "correctness": {"arm": "audio"}} for m in MODELS]),
                     tool_versions={"aqbench": "0.1.0", "aqbench_commit": "abc123", "python": "3.11.2",
                                    "aiperf": "0.13.0"},
                     host=HostFacts(os="Linux 6.1", cpu="Test CPU", cpus=2, hostname="box")), at=T0)
    j.add(PhaseFinished(phase="dataset", outcome="passed", detail=DatasetPhase(
        name="audioqa-v1", identity="d" * 64, path="/w/datasets/audioqa-v1", items=4,
        arms=["audio", "silence", "transcript"])))

    # 1. ref-ok: qualified.
    m = "ref-ok"
    j.add(PhaseStarted(phase="model", model=m, detail=ModelPhase(checkpoint=f"org/{m}")))
    _server(j, m, 100)
    _capability(j, m)
    j.add(PhaseStarted(phase="correctness", model=m))
    for i in range(2):  # the correctness stage's probes are accounted in their own window
        _request(j, f"{m}/correctness", f"probe{i}", phase="profiling", start_s=1 + i, latency=1000.0)
    _verdicts(j, m, {("i1", "audio"): "correct", ("i2", "audio"): "correct", ("i3", "audio"): "correct",
                     ("i4", "audio"): "wrong", ("i1", "silence"): "wrong", ("i2", "silence"): "wrong",
                     ("i3", "silence"): "correct", ("i4", "silence"): "wrong", ("i1", "transcript"): "correct",
                     ("i2", "transcript"): "wrong"})
    j.add(GateEvaluated(model=m, gate="min_pass_rate", scope="arm:audio", required=0.7, observed=0.75, passed=True))
    j.add(PhaseFinished(phase="correctness", model=m, outcome="passed", detail=CorrectnessPhase()))
    j.add(PhaseStarted(phase="identity", model=m))
    j.add(PhaseFinished(phase="identity", model=m, outcome="skipped"))
    j.add(PhaseStarted(phase="aiperf", model=m))
    w = f"{m}/aiperf"
    j.add(AiperfStarted(window=w, argv=["aiperf"], shell="aiperf profile --model ref-ok", artifact_dir="/a",
                        version="0.13.0", fingerprint="fp-1"))
    for i in range(2):
        _request(j, w, f"w{i}", phase="warmup", start_s=5 + i, latency=500.0)
    for i, lat in enumerate([10.0, 20.0, 30.0, 40.0, 100.0]):
        _request(j, w, f"p{i}", phase="profiling", start_s=10 + i, latency=lat, handler=lat - 2,
                 model_call=lat - 5, lifecycle=lat + 2)
    for verdict in ("correct", "correct", "correct", "correct", "wrong"):
        j.add(VerdictReached(model=m, path="aiperf", item_id="i1", arm="audio", verdict=verdict,  # type: ignore[arg-type]
                             item_kind="content"))
    j.add(AccountingChecked(window=w, balanced=True, issued={"warmup": 2, "profiling": 5}))
    j.add(AiperfExited(window=w, returncode=0, classification="complete", duration_ns=5 * S))
    j.add(PhaseFinished(phase="aiperf", model=m, outcome="passed",
                        detail=AiperfPhase(settings=AiperfSettings(concurrency=2, requests=5))))
    _result(j, m, "aiperf-qualified")

    # 2. no-audio: the server rejects input_audio with 400.
    m = "no-audio"
    j.add(PhaseStarted(phase="model", model=m))
    _server(j, m, 200)
    j.add(PhaseStarted(phase="capability", model=m))
    j.add(CapabilityProbed(model=m, check="transport", passed=False, reason="input_audio rejected with HTTP 400",
                           evidence=TransportEvidence(with_audio=HttpExchange(
                               status=400, body="{\"error\": \"unsupported content part: input_audio\"}"))))
    j.add(PhaseFinished(phase="capability", model=m, outcome="failed", reason="input_audio rejected with HTTP 400"))
    _result(j, m, "unsupported", "capability", "input_audio rejected with HTTP 400")

    # 3. weak: correctness below its gate.
    m = "weak"
    j.add(PhaseStarted(phase="model", model=m))
    _server(j, m, 300)
    _capability(j, m)
    j.add(PhaseStarted(phase="correctness", model=m))
    _verdicts(j, m, {("i1", "audio"): "correct", ("i2", "audio"): "wrong", ("i3", "audio"): "unparsed",
                     ("i4", "audio"): "correct", ("i1", "silence"): "wrong", ("i2", "silence"): "wrong",
                     ("i3", "silence"): "wrong", ("i4", "silence"): "wrong"})
    j.add(GateEvaluated(model=m, gate="min_pass_rate", scope="arm:audio", required=0.9, observed=0.5, passed=False))
    j.add(GateEvaluated(model=m, gate="min_pass_rate_by_kind", scope="kind:pitch", required=0.8, observed=0.5,
                        passed=False))
    j.add(PhaseFinished(phase="correctness", model=m, outcome="failed", reason="pass rate 0.5 < 0.9",
                        detail=CorrectnessPhase(failing_items=["i2", "i3"])))
    _result(j, m, "failed", "correctness", "pass rate 0.5 < 0.9")

    # 4. crashy: the server dies under AIPerf load.
    m = "crashy"
    j.add(PhaseStarted(phase="model", model=m))
    _server(j, m, 400)
    j.add(GpuSampled(index=0, name="NVIDIA H200", memory_used_bytes=3 * 2**30, memory_total_bytes=141 * 2**30))
    j.add(ResourceSampled(incarnation=1, pid=400, rss_bytes=180 * 2**20, gpu_memory_bytes=2 * 2**30))
    _capability(j, m)
    j.add(PhaseStarted(phase="aiperf", model=m))
    w = f"{m}/aiperf"
    j.add(AiperfStarted(window=w, argv=["aiperf"], shell="aiperf profile --model crashy", artifact_dir="/b",
                        version="0.13.0", fingerprint="fp-1"))
    _request(j, w, "cw0", phase="warmup", start_s=100, latency=40.0)
    for i, lat in enumerate([50.0, 60.0, 70.0]):
        _request(j, w, f"c{i}", phase="profiling", start_s=101 + i, latency=lat, handler=lat - 1)
    j.add(ServerExited(incarnation=1, pid=400, returncode=-9, signal="SIGKILL", during="run",
                       output_tail=["loading", "Killed"]))
    for i, (cause, rule) in enumerate([("server_crash", "open_at_exit"), ("server_crash", "open_at_exit"),
                                       ("connection", "refused")]):
        _request(j, w, f"x{i}", phase="profiling", start_s=104, latency=None, ok=False, cause=cause, rule=rule)
    j.add(RequestUnmatched(request_id="x2", half="client", cause="no_server_record", window=w, phase="profiling"))
    j.add(ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason="crashed"))
    j.add(ServerSpawned(incarnation=2, pid=401, argv=["srv"]))
    j.add(ServerReady(incarnation=2, pid=401, startup_ns=900_000_000))
    j.add(AccountingChecked(window=w, balanced=True, issued={"warmup": 1, "profiling": 6}))
    j.add(AiperfExited(window=w, returncode=1, classification="partial", reason="3 requests failed"))
    j.add(PhaseFinished(phase="aiperf", model=m, outcome="failed", reason="3 of 6 requests failed",
                        detail=AiperfPhase(identity_mismatches=[AnswerMismatch(
                            item_id="i1", arm="audio", answers={"http": "thursday", "aiperf": "friday"})],
                            settings=AiperfSettings(concurrency=2))))
    _result(j, m, "failed", "aiperf", "3 of 6 requests failed")
    j.add(Warned(code="slow_start", message="crashy took 1.5 s to start"))
    if finished:
        j.add(RunFinished(status="failed", exit_code=1))
    return j


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return qualify_journal().write(tmp_path / "run" / "events.jsonl")


class TestFold:
    def test_rows_in_config_order_with_status_and_stage(self, journal: Path) -> None:
        """Each model gets one row, in bench.toml order, with the status and failed stage ModelResult gave."""
        rows = build_report(journal).rows
        assert [(r.model, r.status, r.failed_stage) for r in rows] == [
            ("ref-ok", "aiperf-qualified", ""), ("no-audio", "unsupported", "capability"),
            ("weak", "failed", "correctness"), ("crashy", "failed", "aiperf")]
        ok = rows[0]
        assert (ok.checkpoint, ok.profile, ok.revision, ok.family, ok.native_task, ok.precision) == (
            "org/ref-ok", "ref-ok-profile", "r1", "audioqa", "AudioQA", "bf16")
        assert ok.bundle_sha256 == "b" * 64 and ok.dataset_identity == "d" * 64 and ok.dataset_name == "audioqa-v1"
        assert ok.commands.qualify == "aqbench qualify --config bench.toml --model ref-ok"
        assert ok.commands.aiperf == "aiperf profile --model ref-ok --concurrency 2"

    def test_qualified_row_numbers_are_exact(self, journal: Path) -> None:
        """Percentiles (type 7), rates, pass rates, audio lift and counts of the qualified row."""
        row = build_report(journal).rows[0]
        t = row.timing
        lat = t.request_latency_ms
        assert (lat.count, lat.p50, lat.p90, lat.mean) == (5, 30.0, 76.0, 40.0)
        assert lat.p99 == pytest.approx(97.6)
        assert (t.handler_ms.p50, t.model_call_ms.p50, t.client_lifecycle_ms.p50) == (28.0, 25.0, 32.0)
        assert t.timing_scope == "public_task_call_wall"
        assert t.span_s == pytest.approx(4.1)
        assert t.requests_per_s == pytest.approx(5 / 4.1)
        assert t.audio_seconds_per_s == pytest.approx(10 / 4.1)
        http = row.correctness["http"]
        assert (http.by_arm["audio"].correct, http.by_arm["audio"].total, http.by_arm["audio"].rate) == (3, 4, 0.75)
        assert http.by_arm["silence"].rate == 0.25 and http.by_arm["transcript"].rate == 0.5
        assert http.by_kind["pitch"]["audio"].rate == 0.5 and http.by_kind["content"]["audio"].rate == 1.0
        lift = http.audio_lift
        assert (lift.vs_silence, lift.speech_items, lift.audio_rate_speech, lift.transcript_rate,
                lift.vs_transcript) == (0.5, 2, 1.0, 0.5, 0.5)
        assert row.correctness["aiperf"].by_arm["audio"].rate == 0.8
        assert (row.counts.warmup.issued, row.counts.warmup.ok, row.counts.profiling.issued,
                row.counts.profiling.errors) == (2, 2, 5, 0)
        assert row.counts.accounting_balanced is True
        assert row.aiperf is not None and (row.aiperf.classification, row.aiperf.fingerprint) == ("complete", "fp-1")
        assert row.aiperf_settings is not None
        assert (row.aiperf_settings.concurrency, row.aiperf_settings.requests) == (2, 5)
        assert row.server.peak_rss_bytes == 150 * 2**20 and row.server.startup_s == 1.5
        assert [g.observed for g in row.gates] == [0.75]
        assert row.windows == ["ref-ok/correctness", "ref-ok/aiperf"]
        report = build_report(journal)
        assert [p.client_ms for p in report.charts["ref-ok"].latency] == [10.0, 20.0, 30.0, 40.0, 100.0]
        probes = next(w for w in report.windows if w.window == "ref-ok/correctness")
        assert probes.counts.profiling.issued == 2 and probes.timing.request_latency_ms.p50 == 1000.0

    def test_unsupported_row_keeps_the_400_evidence(self, journal: Path) -> None:
        """A model rejected at capability carries the probe's reason and the server's 400 body."""
        row = build_report(journal).rows[1]
        assert row.reason == "input_audio rejected with HTTP 400"
        [probe] = row.capability
        assert not probe.passed and isinstance(probe.evidence, TransportEvidence)
        assert probe.evidence.with_audio.status == 400
        assert row.timing.request_latency_ms.count == 0 and row.aiperf is None

    def test_correctness_failure_lists_failing_items_and_gates(self, journal: Path) -> None:
        """Failing items come with their verdict, answer and gold; failed gates with required and observed."""
        row = build_report(journal).rows[2]
        assert [(f.item_id, f.arm, f.kind, f.verdict, f.answer, f.gold) for f in row.failing_items] == [
            ("i2", "audio", "content", "wrong", "friday", "thursday"),
            ("i3", "audio", "pitch", "unparsed", "thursday", "thursday")]
        assert [(g.scope, g.required, g.observed, g.passed) for g in row.gates] == [
            ("arm:audio", 0.9, 0.5, False), ("kind:pitch", 0.8, 0.5, False)]
        http = row.correctness["http"]
        assert http.by_arm["audio"].unparsed == 1 and http.audio_lift.vs_silence == 0.5
        assert http.audio_lift.vs_transcript is None  # no transcript arm was asked

    def test_crash_row_counts_errors_by_cause_and_restarts(self, journal: Path) -> None:
        """The crashed model's profiling errors split by cause, with the exit, restart and GPU facts."""
        row = build_report(journal).rows[3]
        prof = row.counts.profiling
        assert (prof.issued, prof.ok, prof.errors, prof.by_cause) == (6, 3, 3, {"connection": 1, "server_crash": 2})
        # The report says which rule classified each request near the crash (issue 14 item 1).
        assert prof.by_rule == {"connection/refused": 1, "server_crash/open_at_exit": 2}
        assert row.counts.unmatched == {"no_server_record": 1}
        assert row.timing.request_latency_ms.count == 3 and row.timing.request_latency_ms.p50 == 60.0
        assert row.timing.model_call_ms.count == 0 and row.timing.timing_scope == ""
        s = row.server
        assert (s.incarnations, s.restarts, len(s.unexpected_exits)) == (2, 1, 1)
        assert s.unexpected_exits[0].signal == "SIGKILL" and s.unexpected_exits[0].output_tail == ["loading", "Killed"]
        assert s.peak_rss_bytes == 180 * 2**20 and s.peak_gpu_memory_bytes == 2 * 2**30
        assert s.peak_device_memory_used_bytes == 3 * 2**30
        assert [(m.item_id, m.answers) for m in row.load_identity_mismatches] == [
            ("i1", {"aiperf": "friday", "http": "thursday"})]
        assert row.aiperf is not None and row.aiperf.classification == "partial"

    def test_provenance(self, journal: Path) -> None:
        """Provenance names the tools, host, dataset, bench.toml hash, times and the journal's ending."""
        p = build_report(journal).provenance
        assert (p.aqbench_version, p.aqbench_commit, p.aiperf_version, p.aiperf_fingerprint) == (
            "0.1.0", "abc123", "0.13.0", "fp-1")
        assert (p.python, p.os, p.cpu, p.cpus, p.gpus) == ("3.11.2", "Linux 6.1", "Test CPU", 2, ["NVIDIA H200"])
        assert p.config_sha256 == "f" * 64 and p.dataset is not None and p.dataset.items == 4
        assert p.started_at == "2023-11-14T22:13:20.000Z" and p.finished_unix_ns is not None
        assert (p.status, p.exit_code, p.interrupted, p.torn_line) == ("failed", 1, False, None)

    def test_soak_windows_are_summarised_apart(self) -> None:
        """Every AIPerf window gets its own summary, so soak can read any window by name."""
        j = _Journal()
        j.add(RunStarted(command="soak"), at=T0)
        j.add(PhaseStarted(phase="model", model="m"))
        for k, lat in enumerate([10.0, 20.0]):
            w = f"soak/w{k + 1:04d}"
            j.add(AiperfStarted(window=w, argv=[], shell="aiperf", artifact_dir=""))
            for i in range(3):
                _request(j, w, f"{w}-{i}", phase="profiling", start_s=k * 10 + i, latency=lat * (i + 1))
            j.add(SoakWindowClosed(window=w, index=k + 1, summary=WindowStats(
                window=w, index=k + 1, start_unix_ns=T0, end_unix_ns=T0 + S, restarts=k)))
        windows = {w.window: w for w in fold(j.events).windows}
        assert windows["soak/w0001"].timing.request_latency_ms.p50 == 20.0
        assert windows["soak/w0002"].timing.request_latency_ms.p50 == 40.0
        soak = windows["soak/w0002"].soak
        assert soak is not None and soak.restarts == 1 and windows["soak/w0001"].model == "m"

    def test_series_stay_bounded_and_percentiles_exact(self) -> None:
        """Thousands of requests keep at most MAX_POINTS picture points while percentiles stay exact."""
        j = _Journal()
        j.add(RunStarted(command="soak"), at=T0)
        j.add(PhaseStarted(phase="model", model="m"))
        j.add(AiperfStarted(window="m/aiperf", argv=[], shell="aiperf", artifact_dir=""))
        n = 5 * MAX_POINTS + 7
        for i in range(n):
            _request(j, "m/aiperf", str(i), phase="profiling", start_s=i / 100, latency=float(i % 1000))
        report = fold(j.events)
        assert len(report.charts["m"].latency) <= MAX_POINTS and report.charts["m"].latency_stride == 8
        values = sorted(float(i % 1000) for i in range(n))
        import numpy as np

        assert report.rows[0].timing.request_latency_ms.p99 == pytest.approx(float(np.percentile(values, 99)))


class TestJournalEnds:
    def test_torn_last_line_and_missing_run_finished(self, tmp_path: Path) -> None:
        """A torn last line is reported and skipped; without RunFinished the run and open model read interrupted."""
        j = qualify_journal(finished=False)
        cut = next(i for i, e in enumerate(j.events) if isinstance(e, PhaseStarted) and e.model == "crashy"
                   and e.phase == "aiperf")
        j.events = j.events[: cut + 3]
        path = j.write(tmp_path / "events.jsonl")
        with path.open("ab") as fh:
            fh.write(b'{"kind":"request_correlated","request_id":"tor')
        report = build_report(path)
        p = report.provenance
        assert p.interrupted and p.status == "interrupted" and p.finished_unix_ns is None
        assert p.torn_line is not None and p.torn_line.line == cut + 4
        assert [n.kind for n in report.notices][-2:] == ["torn_line", "interrupted"]
        assert (report.rows[3].status, report.rows[3].failed_stage) == ("interrupted", "aiperf")
        assert report.rows[0].status == "aiperf-qualified"


    def test_run_error_before_a_result_reads_error_with_the_run_reason(self) -> None:
        """A run that ended in error before a model's ModelResult marks that row `error` at its open stage."""
        j = qualify_journal(finished=False)
        cut = next(i for i, e in enumerate(j.events) if isinstance(e, AiperfStarted) and e.window == "crashy/aiperf")
        j.events = j.events[: cut + 1]
        j.add(RunFinished(status="error", exit_code=3, reason="AIPerf is not installed"))
        row = fold(j.events).rows[3]
        assert (row.status, row.failed_stage) == ("error", "aiperf")
        assert row.reason == "the run ended before this model's result: AIPerf is not installed"


    def test_corruption_before_the_last_line_is_an_error_naming_the_line(self, journal: Path, tmp_path: Path) -> None:
        """Only the last line may be torn: a bad line earlier stops the report with the file and line."""
        lines = journal.read_bytes().splitlines(keepends=True)
        lines[5] = b'{"kind":"phase_started", broken\n'
        journal.write_bytes(b"".join(lines))
        with pytest.raises(JournalError, match=rf"{journal}:6: corrupt journal line"):
            write_reports(journal, tmp_path / "out")
        assert not (tmp_path / "out" / "report.json").exists()


class TestWrite:
    def test_rebuild_is_byte_identical(self, journal: Path, tmp_path: Path) -> None:
        """Two rebuilds of one journal give byte-identical report.json, report.md and report.html."""
        a = write_reports(journal, tmp_path / "a")
        b = write_reports(journal, tmp_path / "b")
        for name in ("report.json", "report.md", "report.html"):
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
        raw = a.json.read_bytes()
        assert raw == encode_report(load_report(b.json))  # decodes back to the same report
        top = list(msgspec.json.decode(raw))
        assert top == sorted(top) == ["charts", "notices", "provenance", "report_version", "rows", "windows"]

    def test_markdown_puts_results_then_failures_then_details(self, journal: Path, tmp_path: Path) -> None:
        """report.md leads with the result table, then each failure with its evidence, then details."""
        md = write_reports(journal, tmp_path).markdown.read_text()
        assert md.index("## Results") < md.index("## Failures") < md.index("## Details")
        results = md[md.index("## Results"):md.index("## Failures")]
        assert "| ref-ok | org/ref-ok | audioqa | **aiperf-qualified** |" in results
        assert "75.0% (3/4) | +50.0 pp | +50.0 pp | 30.0 / 97.6 | 25.0 | 1.22 |" in results
        failures = md[md.index("## Failures"):md.index("## Details")]
        assert "### no-audio: unsupported at capability" in failures
        assert "unsupported content part: input_audio" in failures
        assert "| i2 | audio | content | wrong | friday | thursday |" in failures
        assert "| profiling | 6 | 3 | 3 | connection 1 (refused 1), server_crash 2 (open_at_exit 2) |" in failures
        assert "ref-ok: aiperf-qualified" not in failures

    def test_html_is_self_contained_with_every_picture(self, journal: Path, tmp_path: Path) -> None:
        """report.html has no scripts or outside links and an SVG for each picture of each model with data."""
        html = write_reports(journal, tmp_path).html.read_text()
        assert "<script" not in html and "<link" not in html and "src=" not in html
        bare = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "http://" not in bare and "https://" not in bare and "url(" not in bare and "@import" not in bare
        for chart in ("latency-over-time", "latency-distribution", "verdict-grid-http", "memory-over-time"):
            assert html.count(f'data-chart="{chart}"') >= 1, chart
        assert html.count('data-chart="latency-over-time"') == 4  # one per model, empty ones as a strip
        assert html.count('class="chart empty" data-chart="latency-over-time"') == 2  # no-audio, weak
        ok = html[html.index('id="model-ref-ok"'):html.index('id="model-no-audio"')]
        assert ok.count('class="cell"') == 12  # 4 items x 3 arms
        assert ok.count('fill="#2ca02c"><title>') == 5  # the five correct http verdicts
        assert ok.count("M") > 5 and "no data" not in ok


class TestCommand:
    def test_aqbench_report_rebuilds_from_run_dir(self, journal: Path, tmp_path: Path) -> None:
        """`aqbench report RUN_DIR --out DIR` exits 0, writes all three files and prints each row's status."""
        out = tmp_path / "out"
        proc = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(journal.parent), "--out", str(out)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "crashy: failed at aiperf" in proc.stdout
        assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md"]
        assert (out / "report.json").read_bytes() == encode_report(build_report(journal))

    def test_aqbench_report_without_journal_is_a_usage_error(self, tmp_path: Path) -> None:
        """A folder without events.jsonl exits 2 and names the missing file."""
        proc = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert f"{tmp_path / 'events.jsonl'}: no run journal here" in proc.stderr
