"""Reports fold a qualify journal into exact result rows and rebuild report.json/md/html from it alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from reports_support import T0, S, _Journal, _request, qualify_journal

from orchestrator.base.errors import JournalError
from orchestrator.events import (
    AiperfStarted,
    PhaseStarted,
    RunFinished,
    RunStarted,
    SoakWindowClosed,
    TransportEvidence,
    WindowStats,
)
from orchestrator.reports import build_report, encode_report, fold, load_report, write_reports
from orchestrator.reports.fold import MAX_POINTS


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
