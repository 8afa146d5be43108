"""Every HTML report kind, opened in headless Chromium at 1280 px, reads right to a person: no console error, no
page wider than the window, charts of real size, no text drawn over another, nothing clipped, badges on one
line, and the text a reader sees (no Markdown backticks, one notice per fact, evidence as indented JSON).
Skipped, with the reason, where Chromium cannot run (tests/browser.py)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import msgspec
from ab_support import AbSpec, write_session
from browser import Browser
from campaign_support import journal as campaign_journal
from compare_support import RunSpec, write_run
from config_support import make_config
from inventory_support import BENCH_TOML, manifests, write_tree
from reports_support import T0, qualify_journal

from orchestrator.campaign import write_campaign_reports
from orchestrator.cli import main
from orchestrator.events import (
    AnyEvent,
    CapacityEstimate,
    GateEvaluated,
    HostSampled,
    PhaseStarted,
    PointStats,
    RunFinished,
    RunStarted,
    ServerReady,
    ServerRestarting,
    ServerStateChanged,
    SloCapacity,
    SloCheck,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
    Warned,
)
from orchestrator.reports import write_reports
from orchestrator.reports.svg import EXPECTED_WRONG_COLOR, VERDICT_COLORS
from orchestrator.reports.sweep import write_sweep_report
from orchestrator.reports.sweep_grid import build_grid_report, write_grid_report

_JOURNALS = Path(__file__).resolve().parents[2] / "data" / "journals"


def _fixture_run(tmp_path: Path, name: str) -> Path:
    """A real run's journal from tests/data/journals, rebuilt into its reports by `aqbench report`."""
    run = tmp_path / name
    run.mkdir()
    (run / "events.jsonl").write_bytes(gzip.decompress((_JOURNALS / name / "events.jsonl.gz").read_bytes()))
    assert main(["--log-level", "error", "report", str(run)]) == 0
    return run


def _with_crashy_server_story(*extra: AnyEvent) -> Any:
    """test_reports' qualify journal (unfinished) with `extra` journaled while crashy's second server runs."""
    j, k = qualify_journal(finished=False), qualify_journal(finished=False)
    k.events.clear()
    k.t = T0
    for ev in j.events:
        k.add(ev, at=max(ev.ts_ns, k.t + 1))
        if isinstance(ev, ServerReady) and ev.incarnation == 2:
            for x in extra:
                k.add(x)
    return k


def _assert_reads_right(seen_problems: list[str]) -> None:
    assert seen_problems == []


# Where each text first shows on the page (the bottom of its line, in px from the top), or null when absent.
_WHERE = """(needles) => {
  const out = {};
  for (const needle of needles) {
    out[needle] = null;
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.includes(needle)) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      out[needle] = range.getBoundingClientRect().bottom + window.scrollY;
      break;
    }
  }
  return out;
}"""
_SCREEN = (1280, 800)


def _assert_leads_with(browser: Browser, page: Path, needles: list[str], *, max_height: int | None = None) -> int:
    """Each of `needles` shows within the first screen (1280x800), and the page is at most `max_height` px tall
    at 1280 px wide; returns the page's height."""
    def measure(tab: Any, _errors: list[str]) -> tuple[int, dict[str, float | None]]:
        return tab.evaluate("document.documentElement.scrollHeight"), tab.evaluate(_WHERE, needles)

    height, where = browser.visit(page, measure, width=_SCREEN[0], height=_SCREEN[1])
    below = {n: y for n, y in where.items() if y is None or y > _SCREEN[1]}
    assert below == {}, f"{page.name}: not in the first screen (None: nowhere): {below}"
    if max_height is not None:
        assert height <= max_height, f"{page.name} is {height} px tall at {_SCREEN[0]} px, over {max_height}"
    return height


class TestQualifyReport:
    def test_the_synthetic_qualify_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """Four models (qualified, unsupported with a 400 body, failing a gate, crashed and restarted while
        degraded): the page lays out cleanly, and shows what the run said in plain words."""
        j = _with_crashy_server_story(
            ServerStateChanged(incarnation=2, state="degraded", previous="ready",
                               reason='HTTP 200 {"status": "ready", "degraded": true}'),
            ServerStateChanged(incarnation=2, state="ready", previous="degraded", reason="HTTP 200"))
        # A kind with no correct answer under a passing overall gate is flagged.
        j.add(GateEvaluated(model="weak", gate="min_pass_rate", scope="arm:silence", required=0.0, observed=0.0,
                            passed=True))
        for _ in range(2):  # the model's sampler and the reference side's say the same thing
            j.add(Warned(code="gpu_sampling_unavailable", message="GPU sampling off: NVML unavailable"))
        j.add(RunFinished(status="failed", exit_code=1))
        run = tmp_path / "run"
        html = write_reports(j.write(run / "events.jsonl"), run).html
        seen = browser.open(html)
        _assert_reads_right(seen.layout_problems())
        assert "`" not in seen.text
        assert "weak: kind content 0/2 correct on the silence arm" in seen.text
        assert seen.text.count("gpu_sampling_unavailable") == 1
        # The 400 body is indented JSON inside the evidence, not one escaped line.
        assert '"error": "unsupported content part: input_audio"' in seen.text and '\\"' not in seen.text
        assert "Server degraded (incarnation 2) from" in seen.text
        charts = {c.chart for c in seen.charts}
        assert {"latency-over-time", "latency-distribution", "memory-over-time", "verdict-grid-http"} <= charts
        assert all(c.width > 300 and c.height > 100 for c in seen.charts if not c.empty)
        # The verdict first: the run's status, each model's status, failed stage and why, the stage table.
        rows = msgspec.json.decode((run / "report.json").read_bytes())["rows"]
        failed = [r for r in rows if r["failed_stage"]]
        assert failed, rows
        _assert_leads_with(browser, html, ["run status", "capability", "correctness", "aiperf"]
                           + [r["model"] for r in rows] + [r["status"] for r in rows]
                           + [r["reason"][:40] for r in failed])
        assert "True" not in seen.text.split() and "False" not in seen.text.split() and "['" not in seen.text

    def test_restarts_name_their_cause(self, browser: Browser, tmp_path: Path) -> None:
        """A restart is listed with the reason the supervisor journaled for it."""
        j = _with_crashy_server_story(ServerRestarting(incarnation=3, attempt=2, backoff_s=2.0,
                                                       reason="readiness 503 three times"))
        j.add(RunFinished(status="failed", exit_code=1))
        run = tmp_path / "run"
        seen = browser.open(write_reports(j.write(run / "events.jsonl"), run).html)
        assert "because readiness 503 three times" in seen.text
        assert "because crashed" in seen.text

    def test_a_real_qualify_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """qualify-v2 (a real reference-server run): clean layout, one GPU notice, the badge on one line, the
        verdict (status, the stage that decided it and why, every stage) in the first screen."""
        page = _fixture_run(tmp_path, "qualify-v2") / "report.html"
        seen = browser.open(page)
        _assert_reads_right(seen.layout_problems())
        assert seen.text.count("gpu_sampling_unavailable") == 1
        assert "0.9454545" not in seen.text
        _assert_leads_with(browser, page, ["run status", "implemented", "noninferiority", "inconclusive", "aiperf"])

    def test_the_default_qualify_report_leads_with_its_verdict_and_is_short(self, browser: Browser,
                                                                            tmp_path: Path) -> None:
        """qualify-default (the README's `aqbench qualify` on the default bench.toml: 415 problems, 3 arms, a
        reference side): the verdict in the first screen, the per-item grids folded under their summary (a
        `wrong` on the silence and transcript arms drawn as expected, not as a failure), no Python literal in a
        table, and the whole page at most 6,000 px tall at 1280 px (23,300 px before the grids were folded)."""
        page = _fixture_run(tmp_path, "qualify-default") / "report.html"
        seen = browser.open(page)
        _assert_reads_right(seen.layout_problems())
        _assert_leads_with(browser, page, ["run status", "aiperf-qualified", "correctness", "noninferiority"],
                           max_height=6000)
        folded = browser.visit(page, lambda tab, _e: tab.evaluate(
            "[...document.querySelectorAll('details')].map(d => [d.open, d.querySelector('summary').textContent,"
            " d.querySelectorAll('svg[data-chart^=verdict-grid] rect.cell').length])"))
        grids = [f for f in folded if "Every item's verdict" in f[1]]
        assert len(grids) == 3 and all(not is_open and cells >= 400 for is_open, _s, cells in grids), folded
        assert "415 items × 3 arms via http" in grids[0][1]
        html = page.read_text()
        assert html.count(f'fill="{EXPECTED_WRONG_COLOR}"><title>') > 0
        wrong_red = re.findall(rf'fill="{VERDICT_COLORS["wrong"]}"><title>[^/]*/ (\w+): wrong', html)
        assert wrong_red and set(wrong_red) == {"audio"}, set(wrong_red)  # red only where audio was given
        for literal in ("True", "False", "['"):
            assert f">{literal}" not in html, literal


class TestOtherReports:
    def test_soak_reports_read_right(self, browser: Browser, tmp_path: Path) -> None:
        """soak-v2's soak.html and report.html lay out cleanly, with every window chart drawn."""
        run = _fixture_run(tmp_path, "soak-v2")
        for page in ("soak.html", "report.html"):
            seen = browser.open(run / page)
            _assert_reads_right(seen.layout_problems())
            assert [c for c in seen.charts if not c.empty], page
        # Each leads with its verdicts: soak.html every metric's, report.html the model's status and stages.
        _assert_leads_with(browser, run / "soak.html", ["Soak INCONCLUSIVE", "Verdicts", "server_rss", "restarts"],
                           max_height=4000)
        _assert_leads_with(browser, run / "report.html", ["run status", "soak-inconclusive", "soak", "server"],
                           max_height=4000)

    def test_run_aiperf_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """A run-aiperf journal's report.html lays out cleanly."""
        run = write_run(tmp_path / "ra", RunSpec(seed=1, requests=200, error_rate=0.05))
        assert main(["--log-level", "error", "report", str(run)]) == 0
        seen = browser.open(run / "report.html")
        _assert_reads_right(seen.layout_problems())
        assert "`" not in seen.text
        _assert_leads_with(browser, run / "report.html", ["run status", "Results", "Stages"], max_height=4000)

    def test_compare_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """compare.html of two run-aiperf journals lays out cleanly with both CDF charts drawn."""
        base = write_run(tmp_path / "base", RunSpec(seed=1, requests=200))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, requests=200, model_call_extra_ms=30.0))
        main(["--log-level", "error", "compare", str(base), str(cand), "--out", str(tmp_path / "cmp")])
        seen = browser.open(tmp_path / "cmp" / "compare.html")
        _assert_reads_right(seen.layout_problems())
        assert len([c for c in seen.charts if not c.empty]) >= 2
        outcome = msgspec.json.decode((tmp_path / "cmp" / "compare.json").read_bytes())["outcome"]
        _assert_leads_with(browser, tmp_path / "cmp" / "compare.html", ["aqbench compare: ", outcome, "Exit code"])

    def test_sweep_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """sweep.html of a bracketed rate sweep (a rerun point, a broken one with long reasons and saturation
        signs) lays out cleanly with both charts drawn and the capacity first."""
        page = write_sweep_report(_sweep_journal(tmp_path / "events.jsonl"), tmp_path)[2]
        seen = browser.open(page)
        _assert_reads_right(seen.layout_problems())
        assert "`" not in seen.text
        assert {c.chart for c in seen.charts if not c.empty} == {"slo-p99_latency", "slo-error_rate", "latency",
                                                                 "throughput"}
        assert all(c.width > 300 and c.height > 100 for c in seen.charts)
        assert seen.text.index("Capacity 2.6 req/s, 90% interval [2.1, 3.3], bound by p99 client latency") \
            < seen.text.index("Capacity 2 req/s") < seen.text.index("Latency against offered load")
        # The verdict (the capacity, its interval, the binding SLO) is in the first screen of a 1280x800 window.
        top, bottom, text = browser.visit(page, lambda pg, _e: pg.evaluate(
            "(() => { const r = document.getElementById('verdict').getBoundingClientRect();"
            " return [r.top, r.bottom, document.getElementById('verdict').innerText]; })()"), width=1280, height=800)
        assert 0 <= top < bottom <= 800 and "interval [2.1, 3.3]" in text and "p99 client latency" in text

    def test_sweep_grid_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """grid.html of `--server-grid replicas=1,2` (two sweeps' journals) lays out cleanly: the capacity of each
        configuration and per replica with its interval in the table, the host's unequal load said, and the Pareto
        chart drawn with every configuration's points, the front and numbered axes."""
        runs = [(str(r), _sweep_journal(tmp_path / f"r{r}" / "events.jsonl", replicas=r)) for r in (1, 2)]
        page = write_grid_report(build_grid_report([(v, j.parent) for v, j in runs], "replicas"), tmp_path / "g")[2]
        seen = browser.open(page)
        _assert_reads_right(seen.layout_problems())
        assert [(c.chart, c.empty) for c in seen.charts] == [("pareto", False)]
        assert all(c.width > 300 and c.height > 100 for c in seen.charts)
        rows, chart = browser.visit(page, lambda tab, _e: (tab.evaluate(
            "[...document.querySelectorAll('tbody tr')].map(tr => [...tr.cells].map(td => td.innerText))"),
            tab.evaluate("(() => { const s = document.querySelector('svg[data-chart=pareto]');"
                         " return [[...s.querySelectorAll(':scope > text')].map(t => t.textContent),"
                         " [...s.querySelectorAll('path.series')].map(p => (p.getAttribute('d').match(/M/g)"
                         " || []).length)]; })()")))
        # Per configuration: its capacity and 90 % interval, the binding SLO, and the same per replica.
        assert [[r[0], *r[2:8], r[9]] for r in rows] == [
            ["replicas=1", "2.6", "[2.1, 3.3]", "p99 client latency", "1", "2.6", "[2.1, 3.3]", "0.3"],
            ["replicas=2", "5.2", "[4.2, 6.6]", "p99 client latency", "2", "2.6", "[2.1, 3.3]", "1.1"]], rows
        assert "The host was unequally busy: other processes took 0.3 of 2 CPUs on average while replicas=1 ran and " \
            "1.1 while replicas=2 ran" in seen.text
        texts, dots = chart
        assert {"replicas=1", "replicas=2", "Pareto front", "p99 ms"} <= set(texts), texts
        assert len([t for t in texts if re.fullmatch(r"[0-9.,]+", t)]) >= 6, texts  # both axes numbered
        # The front grid.json names, then each configuration's four loads (2 req/s's rerun is one point with it).
        front = msgspec.json.decode((page.parent / "grid.json").read_bytes())["pareto"]
        assert dots == [sum(p["on_front"] for p in front), 4, 4] and 0 < dots[0] < 8, dots
        _assert_leads_with(browser, page, ["replicas=1", "replicas=2", "[2.1, 3.3]", "[4.2, 6.6]"])

    def test_ab_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """ab.html of a session with a planted 30 % slowdown, rebuilt by `aqbench report` from its journal:
        clean layout, the verdict badge on one line, the pairs chart drawn, names without Markdown backticks."""
        run = tmp_path / "ab"
        write_session(run, AbSpec(scale=1.3))
        assert main(["--log-level", "error", "report", str(run)]) == 0
        seen = browser.open(run / "ab.html")
        _assert_reads_right(seen.layout_problems())
        assert "`" not in seen.text and "aqbench ab: regressed" in seen.text
        assert [(c.chart, c.empty) for c in seen.charts] == [("ab-pairs", False)]
        assert all(c.width > 300 and c.height > 100 for c in seen.charts)
        _assert_leads_with(browser, run / "ab.html", ["aqbench ab: ", "regressed", "Figures"], max_height=4000)

    def test_campaign_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """A campaign's report.html (a lost node, a retried model, a failed one, a file kept on a node) lays out
        cleanly with its timeline drawn."""
        campaign_journal(tmp_path)
        write_campaign_reports(tmp_path)
        seen = browser.open(tmp_path / "report.html")
        _assert_reads_right(seen.layout_problems())
        assert "10.0.0.1 (lost)" in seen.text and "`" not in seen.text
        assert seen.charts and all(c.width > 300 and c.height > 20 for c in seen.charts if not c.empty)
        # The counts by status first, and the models that did not qualify before those that did.
        report = msgspec.json.decode((tmp_path / "report.json").read_bytes())
        statuses = [r["status"] for r in report["rows"]]
        assert "aiperf-qualified" in statuses and set(statuses) != {"aiperf-qualified"}, statuses
        _assert_leads_with(browser, tmp_path / "report.html", ["Models by status: ", *statuses], max_height=3000)
        shown = [s for s in re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td>", (tmp_path / "report.html").read_text())
                 if s in statuses]
        assert shown == sorted(shown, key=lambda s: s == "aiperf-qualified"), shown

    def test_inventory_report_reads_right(self, browser: Browser, tmp_path: Path) -> None:
        """`aqbench inventory --html` of a checkout with planned, unsupported and broken manifests lays out
        cleanly, long gap reasons and paths included."""
        trtmc = write_tree(tmp_path / "trtmc", manifests())
        (tmp_path / "bench.toml").write_text(BENCH_TOML)
        page = tmp_path / "inventory.html"
        main(["--log-level", "error", "inventory", "--trtmc", str(trtmc), "--config", str(tmp_path / "bench.toml"),
              "--html", str(page)])
        seen = browser.open(page)
        _assert_reads_right(seen.layout_problems())
        assert "acme/aqaish-1b" in seen.text and "`" not in seen.text
        # The counts by status first, the broken manifests and blocked checkpoints first in the table.
        _assert_leads_with(browser, page, ["Checkpoints by status: ", "error", "blocked", "Checkpoints"])
        statuses = browser.visit(page, lambda tab, _e: tab.evaluate(
            "[...document.querySelectorAll('h2 + table')][0].querySelectorAll('tbody tr td:nth-child(3)')"
            ".length ? [...document.querySelector('h2 + table').querySelectorAll('tbody tr td:nth-child(3)')]"
            ".map(td => td.textContent) : []"))
        order = ["error", "blocked", "unsupported", "planned", "implemented", "family-validated", "aiperf-qualified"]
        assert statuses and statuses == sorted(statuses, key=order.index), statuses


def _sweep_journal(path: Path, *, replicas: int | None = None) -> Path:
    """A sweep's journal built from its events: 0.5, 1 and 2 req/s held (2 after a rerun), 4 broke p99 latency
    and answers while saturating. With `replicas` (one configuration of `--server-grid replicas=...`), its
    configuration has that many, every load and capacity scales with them, each replica past the first costs
    10 % of goodput per replica and saves 20 % of latency, and the host is busier for more replicas."""
    x = float(replicas or 1)
    eff, fast = 0.9 ** (x - 1), 0.8 ** (x - 1)
    lat = SloCheck(slo="p99_latency", outcome="fail", observed=9100.0, limit=8000.0, n=300, beyond=40,
                   reason="p99 9100 ms > 8000 ms: 40 of 300 requests beyond, 90% confidence that the p99 is above")
    answers = SloCheck(slo="answers", outcome="fail", observed=3.0, limit=0.0, n=300, beyond=3,
                       reason="3 of 300 answers differ from the concurrency-1 answers: item-0042 (kind language) "
                       "answered 'French' where the baseline said 'German'; item-0107; item-0311")

    def point(load: float, outcome: str, windows: int = 1, p99: float = 800.0) -> SweepPointJudged:
        offered, p99 = load * x, p99 * fast
        checks = [lat, answers] if outcome == "fail" else [
            SloCheck(slo="p99_latency", outcome=outcome, observed=p99, limit=8000.0, n=300,  # type: ignore[arg-type]
                     reason=f"p99 {p99:g} ms <= 8000 ms" if outcome == "pass" else "p99 needs 300 requests, 120 ok"),
            SloCheck(slo="error_rate", outcome="pass", observed=0.0, limit=0.01, n=300, reason="0 of 300 failed")]
        return SweepPointJudged(
            index=0, mode="rate", offered=offered, outcome=outcome,  # type: ignore[arg-type]
            windows=[f"ref/rate{offered:g}-{i}" for i in range(1, windows + 1)], checks=checks,
            aiperf=["complete"] * windows, saturation=["achieved 3.1 req/s of 4 offered", "latency grew 4x over the "
                                                       "run"] if outcome == "fail" else [],
            stats=PointStats(requests=300, ok=297, errors_by_cause={"http_5xx": 3}, error_rate=0.01,
                             achieved_rps=min(load, 3.1) * 0.98 * x, goodput_rps=min(load, 3.1) * 0.95 * x * eff,
                             latency_p50_ms=p99 / 3, latency_p90_ms=p99 / 2, latency_p99_ms=p99,
                             model_call_p50_ms=p99 / 5, model_call_p99_ms=p99 / 4, answers_compared=300,
                             answers_differing=3 if outcome == "fail" else 0,
                             span_s=300 / offered))

    value, low, high, below, above = (v * x for v in (2.6, 2.1, 3.3, 2.0, 4.0))
    points = [v * x for v in (0.5, 1.0, 2.0, 4.0, 8.0)]
    events = [RunStarted(command="sweep", run_id="sweep-20261202T100000Z" if replicas is None else f"sweep-r{replicas}",
                         config=None if replicas is None else make_config(server={"replicas": replicas})),
              PhaseStarted(phase="sweep", detail=SweepPhase(mode="rate", points=points,
                                                           requests_per_point=300, slo={"p99_latency_ms": 8000.0},
                                                           argv=["aqbench", "sweep", "--rates",
                                                                 ",".join(f"{v:g}" for v in points)])),
              *(HostSampled(interval_s=2.0, load1=x, cpus=2, busy_cpus=2.0, run_cpus=1.0, outside_cpus=x * 0.8 - 0.5,
                            steal_share=0.0) for _ in range(3 if replicas else 0)),
              point(0.5, "pass", p99=600.0), point(1.0, "pass", p99=700.0), point(2.0, "inconclusive"),
              point(2.0, "pass", windows=2, p99=2500.0), point(4.0, "fail", p99=9100.0),
              SweepConcluded(outcome="bracketed", mode="rate", unit="req/s", capacity=below, highest_passing=below,
                             lowest_failing=above, broken=[lat, answers], estimate=CapacityEstimate(
                                 value=value, low=low, high=high, binding="p99_latency", shape="smooth",
                                 half_width=0.23, requests_needed=1250, summary=f"capacity {value:g} req/s, 90% "
                                 f"interval [{low:g}, {high:g}], bound by p99 client latency (smooth boundary); ±23.1% "
                                 "reached, not the ±10% asked; about 1250 requests near the boundary would reach it",
                                 slos=[SloCapacity(
                                     slo="p99_latency", allowed=0.01, value=value, low=low, high=high, below=below,
                                     above=above, shape="smooth", share_at_capacity=0.01, summary="p99 client "
                                     f"latency: crosses at {value:g} req/s [{low:g}, {high:g}], smooth between "
                                     f"{below:g} and {above:g}")]),
                             summary=f"capacity {below:g} req/s: {below:g} held every SLO, {above:g} broke p99 client "
                             "latency (p99 9100 ms > 8000 ms) and answers (3 of 300 differ)"),
              RunFinished(status="ok")]
    stamped = [msgspec.structs.replace(e, seq=i, ts_ns=T0 + i * 1_000_000_000) for i, e in enumerate(events, 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in stamped))
    return path


class TestHarness:
    def test_the_measurement_sees_overlap_overflow_and_console_errors(self, browser: Browser, tmp_path: Path) -> None:
        """The harness itself: a page with a legend over its title, a too-wide table, a wrapped badge and a
        script error is reported with each problem, so a clean result above means something."""
        page = tmp_path / "bad.html"
        page.write_text(
            '<html><body style="margin:0"><svg data-chart="c" width="300" height="40">'
            '<text x="0" y="17">a long legend entry</text><text x="20" y="17">the title</text></svg>'
            '<div style="width:2000px">wide</div>'
            '<pre style="width:100px;overflow-x:auto">' + "x" * 300 + "</pre>"
            '<div style="width:60px"><span class="status">aiperf-qualified badge</span></div>'
            "<script>undefinedFunction()</script></body></html>")
        problems = browser.open(page).layout_problems()
        assert any(p.startswith("console error") for p in problems), problems
        assert any("wider than the window" in p for p in problems), problems
        assert any('"a long legend entry" overlaps "the title"' in p for p in problems), problems
        assert any(p.startswith("clipped: <pre>") for p in problems), problems
        assert any(p.startswith("badge wraps") for p in problems), problems

