"""`aqbench qualify` judging a model against its reference end to end, with real reference servers: a model
that answers some kinds wrongly fails against a correct float32 reference, and gates read from the owners'
files (a fixture checkout in TRTMC's shapes) are applied and cited, leaving a too-small set inconclusive."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from test_qualify import DEFAULT, MINI_ITEMS, config, mini_dataset, qualify, results

from orchestrator.events import NoninferiorityJudged, PhaseFinished, ServerSpawned, VerdictReached
from orchestrator.journal import read_journal

# Engine analyses the capability probe never asks about; the reference answers 16 of their problems
# rightly on audioqa-v1 (6 + 4 + 3 + 3), above the 13 that fail a 5-point margin at 144 pairs.
WRONG_KINDS = ["spoken_number", "speaker_sex", "channel", "onset"]


def _server_argv(*extra: str) -> str:
    start = DEFAULT.index("argv = [") + 7
    argv = json.loads(DEFAULT[start: DEFAULT.index("]", start) + 1].replace("\n", " "))
    return json.dumps([*argv, *extra])


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_model_answering_some_kinds_wrongly_fails_against_a_correct_reference(tmp_path: Path) -> None:
    """The int8 server with --fault-wrong-kind answers four kinds wrongly; the float32 reference answers
    them rightly: paired over every scored (item, arm), R's lower bound exceeds the 5-point quantized
    margin, the model ends `failed` at noninferiority, and the report shows both sides."""
    faults = [x for kind in WRONG_KINDS for x in ("--fault-wrong-kind", kind)]
    cfg = config(tmp_path, server_argv=_server_argv(*faults), replace={
        # Judged only against the reference: no absolute floor, no native identity (the fault is HTTP only).
        "min_pass_rate = 0.9\n": "", "[models.correctness.min_pass_rate_by_kind]\ncount = 1.0\n": "",
        'native_argv = ["{python}", "-m", "adapters.reference", "worker"]\n': ""})
    rc, stderr, run_dir = qualify(cfg, "--skip-aiperf", timeout=1100)
    assert rc == 1, stderr[-3000:]
    res = results(run_dir)["reference-audioqa"]
    assert res.status == "failed" and res.failed_stage == "noninferiority", res.row.reason
    ni = res.row.noninferiority
    assert ni is not None and ni.outcome == "fail" and ni.gate_used == "quantized_gate" and ni.margin == 5.0
    assert ni.c == 0 and ni.b is not None and ni.b >= 13 and ni.lower is not None and ni.lower > 5.0
    assert ni.n + ni.reference_unanswered == 144 and ni.out_of_capacity == 0
    assert (ni.candidate_precision, ni.reference_precision) == ("int8", "float32")
    assert res.row.reason.startswith("fail against the reference: R = ")
    events, _ = read_journal(run_dir / "events.jsonl")
    assert [e.result for e in events if isinstance(e, NoninferiorityJudged)] == [ni]
    reference = [e for e in events if isinstance(e, VerdictReached) and e.path == "reference"]
    assert len({(e.item_id, e.arm) for e in reference}) == 144
    # Two servers, one after the other: the model's (int8, faulted), then the reference (float32).
    spawned = [e for e in events if isinstance(e, ServerSpawned)]
    assert [("--fault-wrong-kind" in e.argv, "float32" in e.argv) for e in spawned] == [(True, False), (False, True)]
    md = (run_dir / "report.md").read_text()
    assert "| outcome | fail |" in md and "Correctness via reference:" in md and "Audio lift:" in md
    assert "<tr><td>outcome</td><td>fail</td></tr>" in (run_dir / "report.html").read_text()


TASKS = textwrap.dedent("""\
    defaults:
      reference: {backend: auto}
    benchmarks:
      mmlu: {gate: {margin: 1.0}, quantized_gate: {margin: 2.0}, sampled_gate: {margin: 2.0}}
      audioqa-v1: {metric: dataset, gate: {margin: 3.0}, quantized_gate: {margin: 5.0}}
    tasks:
      audio_text_to_text:
        absolute: [mmlu]
    """)
PROFILE = "absolute: [mmlu, {name: audioqa-v1, quantized_gate: {margin: 10.0}}]\n"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_owners_gates_from_a_trtmc_checkout_are_applied_and_cited(tmp_path: Path) -> None:
    """--trtmc/--rev on a fixture checkout: the profile's exception (10 points for the quantized model) is
    applied to the 18 pairs of a mini set, which cannot decide it: the model stays `implemented`, the row
    says how many paired problems would, and cites file, revision and key."""
    root = tmp_path / "trtmc"
    (root / "apps/aiperf_qual/config/models").mkdir(parents=True)
    (root / "apps/aiperf_qual/config/tasks.yaml").write_text(TASKS)
    (root / "apps/aiperf_qual/config/models/reference-cascade-cpu-int8.yaml").write_text(PROFILE)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    rev = subprocess.run([*git[:3], "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    # The mini set is named for its folder; this workload is the owners' audioqa-v1 benchmark.
    cfg = config(tmp_path, dataset=mini_dataset(tmp_path, MINI_ITEMS), reference=True, replace={
        "[models.correctness.noninferiority]\n": '[models.correctness.noninferiority]\nbenchmark = "audioqa-v1"\n'})
    rc, stderr, run_dir = qualify(cfg, "--skip-aiperf", "--trtmc", str(root), "--rev", rev[:12])
    assert rc == 1, stderr[-3000:]
    res = results(run_dir)["reference-audioqa"]
    assert res.status == "implemented" and res.failed_stage == "noninferiority", res.row.reason
    ni = res.row.noninferiority
    assert ni is not None and (ni.outcome, ni.gate_used, ni.margin, ni.n, ni.b, ni.c) == \
        ("inconclusive", "quantized_gate", 10.0, 18, 0, 0)
    assert ni.items_needed is not None and 18 < ni.items_needed <= 40
    models = "apps/aiperf_qual/config/models/reference-cascade-cpu-int8.yaml"
    assert [(c.file, c.revision, c.entry) for c in ni.citations] == [
        (models, rev, "absolute[1].quantized_gate"), (models, rev, "absolute[1]")]
    assert f"about {ni.items_needed} paired problems would decide" in res.row.reason
    events, _ = read_journal(run_dir / "events.jsonl")
    end = [e for e in events if isinstance(e, PhaseFinished) and e.phase == "noninferiority"]
    assert [e.outcome for e in end] == ["inconclusive"]
    md = (run_dir / "report.md").read_text()
    assert f"| cites | {models}@{rev} absolute[1].quantized_gate |" in md
    assert f"| items needed | {ni.items_needed} |" in md
