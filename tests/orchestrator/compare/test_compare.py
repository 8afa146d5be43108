"""`aqbench compare` over synthetic journals: A/B regressions found and named, A/A calibration, the
refusals and errors of incomparable or unfinished runs, strictness, and what the reports show."""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import Counter
from pathlib import Path

import msgspec
import numpy as np
import pytest
from compare_support import RunSpec, write_run
from scipy.stats import binom  # type: ignore[import-untyped]

from orchestrator.base.errors import ConfigError
from orchestrator.cli import main
from orchestrator.compare import compare_runs
from orchestrator.config import CompareConfig, config_from_dict, config_to_dict, load_config
from orchestrator.events import SCHEMA_VERSION, RunStarted, VerdictReached
from orchestrator.spine.journal import encode_event, read_journal

ROOT = Path(__file__).resolve().parents[3]
QUALIFY_V1 = ROOT / "tests" / "data" / "journals" / "qualify-v1" / "events.jsonl.gz"


def _unzipped(tmp_path: Path) -> Path:
    path = tmp_path / "qualify-v1.jsonl"
    path.write_bytes(gzip.decompress(QUALIFY_V1.read_bytes()))
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main(["--log-level", "error", "compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _figure(result: dict, key: str) -> dict:
    [model] = result["models"]
    return next(f for f in model["figures"] if f["key"] == key)


class TestRegressions:
    def test_model_call_latency_fault_regresses(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A candidate whose model call takes the baseline's model-call p50 longer is `regressed` on it, exit 1."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        probe = compare_runs(base / "events.jsonl", base / "events.jsonl", CompareConfig())
        p50 = next(f for f in probe.models[0].figures if f.key == "latency.model_call.p50").baseline
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, model_call_extra_ms=p50))
        code, out, _err = _cli(capsys, base, cand, "--out", tmp_path / "out")
        assert code == 1
        result = json.loads((tmp_path / "out" / "compare.json").read_text())
        assert result["outcome"] == "regressed"
        for key in ("latency.model_call.p50", "latency.model_call.item_ratio", "latency.client.p50"):
            assert _figure(result, key)["change"] == "regressed", key
        assert _figure(result, "latency.model_call.p50")["lower"] > 0.05
        assert "regressed: server model call p50" in out

    def test_one_answer_changed_names_the_item(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """One item answered differently (and now wrong) is listed with both texts and named as newly wrong."""
        base = write_run(tmp_path / "base", RunSpec(seed=1, arms=("audio", "silence")))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, arms=("audio", "silence"),
                                                    answers={"item-017/audio": "a different answer"},
                                                    wrong=frozenset({"item-017/audio"})))
        code, out, _err = _cli(capsys, base, cand, "--out", tmp_path / "out")
        assert code == 1
        result = json.loads((tmp_path / "out" / "compare.json").read_text())
        [model] = result["models"]
        assert {(a["path"], a["item_id"], a["arm"], a["baseline"], a["candidate"]) for a in model["changed_answers"]} == {
            ("http", "item-017", "audio", "answer item-017", "a different answer"),
            ("aiperf", "item-017", "audio", "answer item-017", "a different answer")}
        correctness = _figure(result, "correctness.http.audio")
        assert correctness["change"] == "regressed" and correctness["items"] == ["item-017/audio"]
        assert _figure(result, "audio_lift.http.silence")["change"] == "regressed"
        assert "regressed: pass rate, http, audio (item-017/audio)" in out
        assert "2 answer(s) changed: aiperf item-017/audio, http item-017/audio" in out

    def test_changed_but_right_answer_is_listed_not_regressed(self, tmp_path: Path) -> None:
        """A reworded answer that is still right is listed with both texts; correctness stays unchanged."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=1, answers={"item-004/audio": "reworded"}))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        [model] = result.models
        assert [(a.item_id, a.baseline, a.candidate, a.candidate_verdict) for a in model.changed_answers if a.path == "http"] \
            == [("item-004", "answer item-004", "reworded", "correct")]
        assert next(f for f in model.figures if f.key == "correctness.http.audio").change == "unchanged"

    def test_changed_completeness_regresses(self, tmp_path: Path) -> None:
        """An item whose answer became incomplete regresses completeness and is named with both defect lists."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, incomplete={"item-009/audio": ["length_limit"]}))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        figure = next(f for f in result.models[0].figures if f.key == "completeness.http")
        assert figure.change == "regressed" and figure.items == ["item-009/audio: complete -> length_limit"]

    def test_more_errors_regress_by_cause(self, tmp_path: Path) -> None:
        """A candidate failing 10 % of requests with 5xx regresses the error rate, all causes and http_5xx."""
        base = write_run(tmp_path / "base", RunSpec(seed=1, requests=2000))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, requests=2000, error_rate=0.10))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        changes = {f.key: f.change for f in result.models[0].figures}
        assert changes["errors.all"] == changes["errors.http_5xx"] == "regressed"


class TestRecordedQualifyJournal:
    @staticmethod
    def _journal(tmp_path: Path, name: str, change_item: str = "") -> Path:
        """The recorded schema-1 qualify journal (tests/data), with one http audio verdict turned wrong."""
        events, _torn = read_journal(_unzipped(tmp_path))
        # Read means upgraded: written back, the journal is of the current schema.
        events = [msgspec.structs.replace(e, schema_version=SCHEMA_VERSION) if isinstance(e, RunStarted) else e
                  for e in events]
        if change_item:
            events = [msgspec.structs.replace(e, verdict="wrong", answer="a different answer")
                      if isinstance(e, VerdictReached) and e.path == "http" and e.arm == "audio"
                      and e.item_id == change_item else e for e in events]
        folder = tmp_path / name
        folder.mkdir()
        (folder / "events.jsonl").write_bytes(b"".join(encode_event(e) + b"\n" for e in events))
        return folder

    def test_same_journal_compares_unchanged(self, tmp_path: Path) -> None:
        """A real qualify journal (schema 1, upgraded on read) against itself: nothing regresses, no answer changed."""
        journal = self._journal(tmp_path, "a")
        result = compare_runs(journal / "events.jsonl", journal / "events.jsonl", CompareConfig())
        [model] = result.models
        assert result.exit_code == 0 and model.paired and model.changed_answers == []
        changes = {f.key: f.change for f in model.figures}
        assert changes["correctness.native.audio"] == changes["completeness.http"] == "unchanged"
        assert changes["audio_lift.http.silence"] == "unchanged"
        assert model.answers_compared > 100

    def test_one_wrong_item_in_a_real_journal_is_named(self, tmp_path: Path) -> None:
        """The same journal with one http audio item now wrong: that item is named and the pass rate regresses."""
        base = self._journal(tmp_path, "a")
        cand = self._journal(tmp_path, "b", change_item="content-meeting-day")
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        [model] = result.models
        regressed = {f.key: f.items for f in model.figures if f.change == "regressed"}
        assert regressed["correctness.http.audio"] == ["content-meeting-day/audio"]
        assert [(a.path, a.item_id, a.candidate, a.candidate_verdict) for a in model.changed_answers] == [
            ("http", "content-meeting-day", "a different answer", "wrong")]


class TestCalibration:
    @pytest.mark.slow
    def test_aa_false_regression_rate_within_stated_level(self, tmp_path: Path) -> None:
        """Over 80 A/A comparisons at tolerance 0, each figure regresses no more often than its 5 % level allows."""
        repeats, cfg = 80, CompareConfig(latency_tolerance=0.0, throughput_tolerance=0.0, error_rate_tolerance=0.0,
                                         resamples=1000)
        regressed: Counter[str] = Counter()
        seen: Counter[str] = Counter()
        for r in range(repeats):
            spec = RunSpec(requests=600, items=60, error_rate=0.05, seed=2 * r)
            base = write_run(tmp_path / f"b{r}", spec)
            cand = write_run(tmp_path / f"c{r}", dataclasses.replace(spec, seed=2 * r + 1))
            for f in compare_runs(base / "events.jsonl", cand / "events.jsonl", cfg).models[0].figures:
                seen[f.key] += 1
                regressed[f.key] += f.change == "regressed"
        # The stated level: (1 - confidence) / 2 = 5 % per direction; allow binomial noise at 1 in 1,000.
        allowed = int(binom.ppf(0.999, repeats, 0.05))
        assert {"latency.client.p99", "latency.model_call.item_ratio", "throughput", "errors.all"} <= set(seen)
        assert {k: n for k, n in regressed.items() if n > allowed} == {}, (allowed, regressed)
        # And not vacuous: at tolerance 0 the intervals do reach past 0 about as often as stated.
        assert 0 < sum(regressed.values()) / sum(seen.values()) <= 0.05

    def test_aa_default_tolerances_unchanged_with_enough_samples(self, tmp_path: Path) -> None:
        """Two runs of one distribution with 5,000 requests each: latency and throughput figures read unchanged."""
        base = write_run(tmp_path / "base", RunSpec(seed=3, requests=5000, items=100))
        cand = write_run(tmp_path / "cand", RunSpec(seed=4, requests=5000, items=100))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        changes = {f.key: f.change for f in result.models[0].figures}
        assert changes["latency.client.p50"] == changes["latency.model_call.item_ratio"] == "unchanged"
        assert "regressed" not in changes.values() and result.exit_code == 0


class TestHost:
    def test_both_hosts_are_shown_and_named_where_a_change_is_not_attributable(self, tmp_path: Path) -> None:
        """Each run's host samples are summed into compare.json and compare.md; where a 12 % slower candidate
        differs only within the runs' own drift, the reason names both hosts (here: the candidate's busier)."""
        base = RunSpec(requests=800, items=40, seed=1, drift=0.6, outside_cpus=0.1)
        a = write_run(tmp_path / "a", base)
        b = write_run(tmp_path / "b", dataclasses.replace(base, seed=2, scale=1.12, outside_cpus=1.4))
        assert main(["--log-level", "error", "compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
        result = json.loads((tmp_path / "out" / "compare.json").read_text())
        assert result["baseline"]["host"]["outside_cpus"] == 0.1 and result["candidate"]["host"]["samples"] == 8
        assert result["outcome"] == "inconclusive"
        assert "differs, not attributable: host while each ran: baseline load 1.10 on 2 CPUs, outside CPU 0.10" \
            in result["reason"] and "candidate load 2.40 on 2 CPUs, outside CPU 1.40" in result["reason"]
        assert "Host while each ran: baseline load 1.10" in (tmp_path / "out" / "compare.md").read_text()


class TestRefusals:
    def test_a_folder_that_is_not_a_run(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A candidate folder without events.jsonl: exit 2 saying it is a folder but not a run's, and what to pass."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        (tmp_path / "empty").mkdir()
        code, _out, err = _cli(capsys, base, tmp_path / "empty")
        assert code == 2
        assert f"candidate {tmp_path / 'empty'}: a folder, but not a run's (no events.jsonl in it); pass a run " \
            f"folder (runs/<id>/)" in err and "missing half" not in err

    def test_a_path_that_does_not_exist(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A path that does not exist: exit 2 with its own message."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        code, _out, err = _cli(capsys, base, tmp_path / "no-such-path")
        assert code == 2
        assert f"candidate {tmp_path / 'no-such-path'}: no such file or folder" in err

    def test_runs_of_different_kinds(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A run-aiperf run against a soak: exit 2 naming both kinds, nothing written into either run's folder."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, command="soak"))
        before = sorted(p.name for p in cand.iterdir())
        code, _out, err = _cli(capsys, base, cand)
        assert code == 2
        assert f"baseline {base} is a run-aiperf run and candidate {cand} a soak run: runs of different kinds do not " \
            f"compare" in err
        assert sorted(p.name for p in cand.iterdir()) == before

    def test_run_in_progress_is_refused(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A journal without RunFinished: exit 2, the run is still in progress or interrupted."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, finished=False))
        code, _out, err = _cli(capsys, base, cand)
        assert code == 2
        assert "the run is still in progress or was interrupted (its journal has no RunFinished)" in err

    def test_different_datasets_are_refused_first(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Different dataset identities: exit 2, the reason first, no figures, the provenance row blocks."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, dataset_identity="sha256:bbbb"))
        code, _out, err = _cli(capsys, base, cand, "--out", tmp_path / "out")
        assert code == 2
        assert "dataset identity: sha256:aaaa vs sha256:bbbb" in err and err.count("not comparable") == 1
        assert f"the full list is in {tmp_path / 'out' / 'refused.txt'}" in err
        result = json.loads((tmp_path / "out" / "compare.json").read_text())
        assert result["outcome"] == "refused" and result["models"] == []
        assert [r["name"] for r in result["provenance"] if r["blocks"]] == ["dataset identity"]
        assert (tmp_path / "out" / "compare.md").read_text().splitlines()[6] == "## Not comparable"

    def test_a_refusal_is_one_paragraph_and_writes_into_no_run(self, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
        """Without --out: the two runs and the first two differences, once; the full list in a temp file the
        paragraph names; nothing written into either run's folder."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, concurrency=4, dataset_identity="sha256:bbbb"))
        before = {d: sorted(p.name for p in d.iterdir()) for d in (base, cand)}
        code, out, err = _cli(capsys, base, cand)
        assert code == 2 and out == ""
        [line] = [line for line in err.splitlines() if "not comparable" in line]
        assert f"baseline {base} (run-aiperf run run-1)" in line and f"candidate {cand} (run-aiperf run run-2)" in line
        assert "differ in 2 ways that forbid comparing figures, first: dataset identity: sha256:aaaa vs sha256:bbbb; " \
            "m: AIPerf --concurrency: 2 vs 4; the full list is in " in line
        listed = Path(line.split("the full list is in ")[1].split(" (a temp file")[0])
        try:
            assert "- m: AIPerf --concurrency: 2 vs 4" in listed.read_text()
        finally:
            listed.unlink()
        assert {d: sorted(p.name for p in d.iterdir()) for d in (base, cand)} == before

    def test_different_workload_is_refused(self, tmp_path: Path) -> None:
        """Concurrency 2 against 4 is refused; a different request count alone is only reported."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, concurrency=4))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        assert result.exit_code == 2 and result.refusals == [
            "different workload settings for m: AIPerf --concurrency 2 vs 4"]
        longer = write_run(tmp_path / "longer", RunSpec(seed=2, requests=500))
        result = compare_runs(base / "events.jsonl", longer / "events.jsonl", CompareConfig())
        assert result.exit_code != 2
        assert [(r.name, r.blocks) for r in result.provenance if r.differs] == [("m: AIPerf --request-count", False)]

    def test_the_fast_start_flag_is_not_a_workload_difference(self, tmp_path: Path) -> None:
        """A run from before aqbench passed --prompt-corpus random (AIPerf's synthetic prompts, unused by its
        input file) compares with one after: not refused, and no provenance row differs."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, aiperf_args=("--prompt-corpus", "random")))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        assert result.exit_code != 2 and not result.refusals
        assert [r.name for r in result.provenance if r.differs] == []

    def test_different_model_call_scope_is_refused(self, tmp_path: Path) -> None:
        """model_call_ms measured over a different scope is not the same figure: refused, exit 2."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, timing_scope="worker_roundtrip"))
        result = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig())
        assert result.exit_code == 2 and result.refusals == [
            "different workload settings for m: model_call_ms scope public_task_call_wall vs worker_roundtrip"]

    def test_model_in_one_run_only(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--model naming a model of one run only: exit 2 saying where it is and which models are shared."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, model="other"))
        code, _out, err = _cli(capsys, base, cand, "--model", "m")
        assert code == 2 and "--model 'm': not in both runs (found in: baseline); models in both: none" in err
        code, _out, err = _cli(capsys, base, cand)
        assert code == 2 and "no model ran in both runs (baseline: m; candidate: other)" in err


class TestOutcome:
    def test_inconclusive_exits_one_only_with_strict(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Too few requests make figures inconclusive: listed, exit 0; with --strict exit 1."""
        base = write_run(tmp_path / "base", RunSpec(seed=1, requests=30, items=10))
        cand = write_run(tmp_path / "cand", RunSpec(seed=1, requests=30, items=10))
        code, out, _err = _cli(capsys, base, cand, "--out", tmp_path / "o1")
        assert code == 0 and "inconclusive: no regression;" in out
        assert _cli(capsys, base, cand, "--out", tmp_path / "o2", "--strict")[0] == 1

    def test_sampling_model_compares_rates_not_answers(self, tmp_path: Path) -> None:
        """correctness.deterministic = false: answers are not compared item by item; the rate has an interval."""
        base = write_run(tmp_path / "base", RunSpec(seed=1, deterministic=False))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, deterministic=False, answers={"item-001/audio": "x"},
                                                    wrong=frozenset({"item-001/audio"})))
        [model] = compare_runs(base / "events.jsonl", cand / "events.jsonl", CompareConfig()).models
        assert not model.deterministic and model.changed_answers == []
        figure = next(f for f in model.figures if f.key == "correctness.http.audio")
        assert figure.method == "tango-score" and figure.change == "inconclusive" and figure.items == []

    def test_reports_escape_and_draw(self, tmp_path: Path) -> None:
        """compare.html escapes answer text, draws both CDFs per model, and compare.md has the delta table."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, answers={"item-002/audio": "<script>x</script>"}))
        assert main(["--log-level", "error", "compare", str(base), str(cand)]) == 0
        html = (cand / "compare" / "compare.html").read_text()
        assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
        assert html.count('data-chart="cdf-client"') == 1 and html.count('data-chart="cdf-model_call"') == 1
        assert "<polyline" in html
        md = (cand / "compare" / "compare.md").read_text()
        assert "| m | server model call p50 |" in md and "## Changed answers: m" in md


class TestConfig:
    def test_compare_section_defaults_and_unknown_keys(self, tmp_path: Path) -> None:
        """bench.toml's [compare] states the defaults; an unknown key is refused naming it."""
        cfg = load_config(ROOT / "bench.toml")
        assert cfg.compare == CompareConfig()
        assert (cfg.compare.latency_tolerance, cfg.compare.confidence) == (0.05, 0.90)
        data = config_to_dict(cfg)
        data["compare"]["latency_tolerence"] = 0.1
        with pytest.raises(ConfigError, match=r"compare: unknown key latency_tolerence"):
            config_from_dict(data, where="bench.toml")

    def test_tolerance_from_config_applies(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A 200 % latency tolerance in --config makes a 150 ms slower model call `unchanged`."""
        base = write_run(tmp_path / "base", RunSpec(seed=1))
        cand = write_run(tmp_path / "cand", RunSpec(seed=2, model_call_extra_ms=150.0))
        text = (ROOT / "bench.toml").read_text().replace("latency_tolerance = 0.05", "latency_tolerance = 2.0")
        (tmp_path / "bench.toml").write_text(text)
        _cli(capsys, base, cand, "--config", tmp_path / "bench.toml", "--out", tmp_path / "out")
        result = json.loads((tmp_path / "out" / "compare.json").read_text())
        assert _figure(result, "latency.model_call.p50")["change"] == "unchanged"
        assert _figure(result, "latency.model_call.p50")["tolerance"] == 2.0
        assert np.isfinite(_figure(result, "latency.model_call.p50")["lower"])
