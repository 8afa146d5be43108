"""report.html and inventory.html from the Jinja2 templates: every value from the journal is escaped, and a
template that names a value its caller did not give fails the render instead of printing nothing."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from orchestrator.events import AiperfSettings, HttpExchange, TransportEvidence
from orchestrator.inventory import to_html
from orchestrator.inventory.records import (
    CheckpointRow,
    Evidence,
    Gap,
    Inventory,
    OwnerStatus,
    Reconciliation,
    TreeSource,
    VariantRow,
)
from orchestrator.reports import render_html
from orchestrator.reports.schema import (
    AiperfRun,
    AudioLift,
    CapabilityCheck,
    Commands,
    CompletenessLine,
    Counts,
    DatasetIdentity,
    FailingItem,
    GateRow,
    GridCell,
    GridRow,
    Histogram,
    IdentityResult,
    IncompleteAnswer,
    LatencyPoint,
    MemoryPoint,
    Mismatch,
    ModelCharts,
    ModelRow,
    Notice,
    PassRate,
    PathCorrectness,
    PhaseCounts,
    Provenance,
    RunReport,
    ServerExit,
    ServerFacts,
    StageOutcome,
    Summary,
    Timing,
    TornInfo,
    VerdictGrid,
    WindowSummary,
)
from orchestrator.reports.templating import TEMPLATES, render

XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _rate(correct: int, total: int) -> PassRate:
    return PassRate(total=total, correct=correct, wrong=total - correct, rate=correct / total if total else None)


def _failed_model(name: str) -> ModelRow:
    """A failed model with something in every part of its story: checks, gates, items, exits, mismatches."""
    http = PathCorrectness(path="http", by_arm={"audio": _rate(1, 4), "silence": _rate(0, 4)},
                           by_kind={"date": {"audio": _rate(0, 2)}, "count": {"audio": _rate(1, 2)}},
                           audio_lift=AudioLift(audio_rate=0.25, silence_rate=0.0, vs_silence=0.25, speech_items=4,
                                                audio_rate_speech=0.25, transcript_rate=0.5, vs_transcript=-0.25))
    timing = Timing(request_latency_ms=Summary(count=8, p50=12.5, p90=40.0, p99=140.0, mean=20.0),
                    handler_ms=Summary(count=8, p50=10.0), model_call_ms=Summary(count=8, p50=9.0),
                    timing_scope="public_task_call_wall", span_s=4.0, requests_per_s=2.0, audio_seconds_per_s=4.6)
    counts = Counts(warmup=PhaseCounts(issued=2, ok=1, errors=1, by_cause={"http_5xx": 1}),
                    profiling=PhaseCounts(issued=8, ok=7, errors=1, by_cause={"timeout": 1}),
                    other=PhaseCounts(issued=1, ok=1), accounting_balanced=False,
                    accounting_problems=["2 issued <> 1 seen"])
    return ModelRow(
        model=name, checkpoint="acme/listen-1", profile="fp8", revision="r1", family="whisperish",
        native_task="AudioTextToText", precision="fp8", bundle_sha256="ab" * 32, dataset_name="audioqa-v1",
        dataset_identity="0123456789abcdef", status="failed", failed_stage="correctness",
        reason="audio pass rate 25% < 50% ('gate' \"arm:audio\")",
        stages=[StageOutcome(phase="model"), StageOutcome(phase="capability", outcome="passed", duration_s=1.25),
                StageOutcome(phase="correctness", reason="gate failed")],
        capability=[CapabilityCheck(check="answers_text", passed=True),
                    CapabilityCheck(check="hears_audio", passed=False, reason=f"answered {XSS}",
                                    evidence=TransportEvidence(with_audio=HttpExchange(status=400, body=XSS)))],
        correctness={"http": http, "native": PathCorrectness(path="native", by_arm={"audio": _rate(2, 4)}),
                     "aiperf": PathCorrectness(path="aiperf", by_arm={"audio": _rate(3, 4)})},
        gates=[GateRow(gate="pass_rate", scope="arm:audio", required=0.5, observed=0.25, passed=False),
               GateRow(gate="lift", scope="arm:silence", required=0.1, observed=0.25, passed=True)],
        failing_items=[FailingItem(item_id="q-01", arm="audio", kind="date", verdict="wrong", answer=XSS,
                                   gold="Thursday & Friday"),
                       FailingItem(item_id="q-02", arm="audio", kind="count", verdict="error", answer=None)],
        identity=IdentityResult(outcome="mismatch", compared=4,
                                mismatches=[Mismatch(item_id="q-03", arm="audio", answers={"native": "a", "http": None})]),
        load_identity_mismatches=[Mismatch(item_id="q-04", arm="audio", answers={"http": "<b>"})],
        aiperf=AiperfRun(window=f"{name}/aiperf", classification="failed", reason="exit 1 <stderr>"),
        aiperf_settings=AiperfSettings(warmup_requests=2, concurrency=4, arms=["audio"]), counts=counts, timing=timing,
        server=ServerFacts(incarnations=2, restarts=1, orphans_killed=1, peak_rss_bytes=300 << 20,
                           peak_gpu_memory_bytes=2 << 30,
                           unexpected_exits=[ServerExit(incarnation=1, pid=41, signal="SIGKILL", during="profiling",
                                                        output_tail=["boom <oom>", "bye"]),
                                             ServerExit(incarnation=2, pid=42, returncode=3, during="warmup")]),
        commands=Commands(qualify="aqbench qualify --model m", aiperf="aiperf profile --url 'http://x'"),
        completeness=[CompletenessLine(path="http", checked=8, complete=6, defects={"echo": 1, "length_limit": 1},
                                       items=[IncompleteAnswer(item_id="q-05", arm="audio", request_id="req-1",
                                                               defects=["echo"], details=["repeats <q>"],
                                                               verdict="wrong", answer=XSS)],
                                       items_left_out=3)],
    )


def _charts() -> ModelCharts:
    grid = VerdictGrid(path="http", arms=["audio", "silence"], truncated=2, rows=[
        GridRow(item_id="q-01", cells={"audio": GridCell(verdict="wrong", answer=XSS, gold="Thursday"),
                                       "silence": GridCell(verdict="correct", answer="no", gold="no")})])
    return ModelCharts(
        latency=[LatencyPoint(t_s=0.5, client_ms=12.0, handler_ms=10.0, model_call_ms=9.0),
                 LatencyPoint(t_s=1.5, client_ms=40.0)], latency_stride=2,
        histogram=Histogram(edges_ms=[1.0, 10.0, 100.0], counts={"client": [1, 3], "server": [2, 2]}),
        memory=[MemoryPoint(t_s=0.0, rss_bytes=200 << 20, gpu_memory_bytes=1 << 30),
                MemoryPoint(t_s=2.0, rss_bytes=300 << 20)],
        grids=[grid])


def every_part_report() -> RunReport:
    """A report that reaches every part of report.html, with HTML metacharacters in the journal's text."""
    failed = "m<1>&'\""
    prov = Provenance(run_id="run-<7>", command="qualify", argv=["aqbench", "qualify", "--x", "<y>"],
                      aqbench_version="0.1.0", aiperf_version="0.13.0", python="3.11", os="Linux", cpu="x86",
                      cpus=2, gpus=["H200"], hostname="h", config_path="bench.toml", config_sha256="cd" * 32,
                      dataset=DatasetIdentity(name="audioqa-v1", identity="id", items=40, arms=["audio", "silence"]),
                      started_at="2026-01-01T00:00:00Z", duration_s=12.5, status="failed", exit_code=1,
                      reason="gate <failed>", torn_line=TornInfo(line=9, text="{"), events=99)
    window = WindowSummary(window=f"{failed}/aiperf", model=failed, aiperf=AiperfRun(window="w", classification="complete"),
                           counts=Counts(profiling=PhaseCounts(issued=8, ok=7, errors=1, by_cause={"timeout": 1}),
                                         accounting_balanced=True))
    return RunReport(
        provenance=prov,
        rows=[_failed_model(failed), ModelRow(model="later", status="planned", reason="would run <3> stages"),
              ModelRow(model="fine", status="aiperf-qualified")],
        windows=[window, WindowSummary(window="fine/aiperf", model="fine")],
        notices=[Notice(kind="failed", code="E1", model=failed, message="server <died>"),
                 Notice(kind="warned", code="W1", message="no GPU & no NVML")],
        charts={failed: _charts()},
    )


class TestReportHtml:
    def test_answers_with_markup_are_escaped_everywhere(self) -> None:
        """A model answer `<script>alert(1)</script>` shows as text in the failing items, the verdict grid's
        tooltip, the capability evidence and the incomplete answers; no script element reaches the page."""
        html = render_html(every_part_report())
        assert "<script" not in html
        assert f"<td>{XSS_ESCAPED}</td>" in html  # failing items
        grid = re.search(r'<svg class="chart" data-chart="verdict-grid-http".*?</svg>', html)
        assert grid is not None and f"answer &#x27;{XSS_ESCAPED}&#x27;" in grid.group(0)
        assert f"&quot;body&quot;: &quot;{XSS_ESCAPED}&quot;" in html  # capability evidence, as JSON in a <pre>
        assert f"<td>&#x27;{XSS_ESCAPED}&#x27;</td>" in html  # incomplete answers show the repr
        assert "<h1>aqbench report: run-&lt;7&gt;</h1>" in html
        assert '<h3 id="model-m&lt;1&gt;&amp;&#x27;&quot;">' in html

    def test_every_part_renders(self) -> None:
        """Each section the report can hold appears: plan, failures, run errors, notices, charts, windows."""
        html = render_html(every_part_report())
        for text in ("<h2>Plan</h2>", "<li><b>later</b>: would run &lt;3&gt; stages</li>", "<h3>Run errors</h3>",
                     "<h3>Notices</h3>", "<h3>Request windows</h3>", "torn and skipped", "Failing items:",
                     "Incomplete answers:", "identity mismatches:", "with signal SIGKILL", "with code 3",
                     "<pre>boom &lt;oom&gt;\nbye</pre>", "peak GPU memory 2048.0 MiB", "Reproduce:",
                     "server model_call_ms (public_task_call_wall)", "AIPerf ended failed (no exit code); 1 of 8 profiling requests failed (timeout 1). Judged from its files: "
                     "exit 1 &lt;stderr&gt;"):
            assert text in html, text
        assert html.count('data-chart="verdict-grid-http"') == 1 and html.endswith("</body></html>\n")
        # AIPerf settings by name, each with its value.
        assert re.search(r"<td>arms</td><td>audio</td></tr><tr><td>concurrency</td><td>4</td>.*"
                         r"<td>warmup_requests</td><td>2</td>", html)


class TestInventoryHtml:
    def test_checkout_text_is_escaped_and_code_spans_kept(self) -> None:
        """Text read from a checkout (file names, gaps, notes) is escaped; a gap's `code` spans become <code>."""
        ev = Evidence(claim="c", file="a<b>.yaml", field="x&y")
        row = CheckpointRow(
            checkpoint="acme/<x>", revision="", family="f", profile="p", file="m.yaml", full_model_coverage=True,
            task_strategy="T", runtime_strategy="", user_contracts=[], precision="fp8", cache_length=None,
            audio_inputs=[], capability_class="audio-qa", classes_seen={}, status="planned", gap="",
            controls=[], evidence=[], variants=[], gaps=[Gap(text="needs `<Task>` & more", evidence=[ev])],
            owner_status=[OwnerStatus(file="s.md", line=3, hf_id="h", profile="p", platforms={"x86": "<G>"})],
            notes=[XSS])
        inv = Inventory(source=TreeSource(root="/t"), layouts_found=[], manifests_scanned=1, manifests_in_group=1,
                        rows=[row], variants=[VariantRow(checkpoint="acme/<x>", revision="", profile="tp2", file="v",
                                                         kinds=["tp"])],
                        errors=[], reconciliation=Reconciliation(), accounted=True, unaccounted=[])
        html = to_html(inv)
        assert "<script" not in html and f"note: {XSS_ESCAPED}" in html
        assert "gap: needs <code>&lt;Task&gt;</code> &amp; more — <code>a&lt;b&gt;.yaml</code> x&amp;y" in html
        assert "<h3>acme/&lt;x&gt;</h3>" in html and ": x86 &lt;G&gt; (<code>s.md</code> line 3)" in html
        assert "<li>variant <code>tp2</code>: tp</li>" in html


class TestTemplating:
    def test_a_missing_value_fails_the_render(self) -> None:
        """StrictUndefined: a template naming a value the caller did not pass raises, naming it."""
        with pytest.raises(jinja2.UndefinedError, match="'report' is undefined"):
            render("report.html")

    def test_templates_live_in_the_package(self) -> None:
        """The templates are files of orchestrator/reports/templates (shipped as package data)."""
        assert {"report.html", "report_sections.html", "macros.html", "inventory.html"} <= {
            p.name for p in TEMPLATES.iterdir()}

    def test_compiled_templates_are_kept_for_the_next_process(self, tmp_path: Path) -> None:
        """A second process renders a journal's report.html from the templates the first one compiled (Jinja's
        parser never runs there), to the same bytes as the first and as the fixture's report."""
        fixture = Path(__file__).resolve().parents[2] / "data" / "journals" / "qualify-v2"
        journal = tmp_path / "events.jsonl"
        journal.write_bytes(gzip.decompress((fixture / "events.jsonl.gz").read_bytes()))
        code = ("import sys\nfrom pathlib import Path\nimport jinja2\n"
                "def refuse(*args, **kwargs):\n    raise AssertionError('a template was parsed again')\n"
                "if sys.argv[2] == 'second':\n    jinja2.Environment._parse = refuse\n"
                "from orchestrator.reports import write_reports\n"
                "sys.stdout.buffer.write(write_reports(Path(sys.argv[1]), Path(sys.argv[1]).parent / sys.argv[2])"
                ".html.read_bytes())")
        env = {**os.environ, "TMPDIR": str(tmp_path)}  # Jinja's private folder under it, not the host's
        html = [subprocess.run([sys.executable, "-c", code, str(journal), which], capture_output=True, env=env,
                               check=True, timeout=60).stdout for which in ("first", "second")]
        assert list(tmp_path.glob(f"_jinja2-cache-{os.getuid()}/__aqbench_*.cache"))
        assert html[0] == html[1] == gzip.decompress((fixture / "report.html.gz").read_bytes())
