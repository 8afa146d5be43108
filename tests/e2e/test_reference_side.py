"""`aqbench qualify` judging a model against its reference end to end, with real reference servers: gates read
from the owners' files (a fixture checkout in TRTMC's shapes) are applied and cited, leaving a too-small set
inconclusive. (A model answering a tenth of the items wrongly failing against its reference, beside the clean
default passing, is tests/e2e/test_qualify.py's default run.)"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from test_qualify import MINI_ITEMS, config, mini_dataset, qualify, results

from orchestrator.events import PhaseFinished
from orchestrator.spine.journal import read_journal

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
# Functional assertions only (gates applied and cited): runs beside the serial lane (tests/conftest.py, `beside`).
pytestmark = pytest.mark.beside


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_owners_gates_from_a_trtmc_checkout_are_applied_and_cited(tmp_path: Path) -> None:
    """--trtmc/--rev on a fixture checkout: the profile's exception (10 points for the quantized model) is
    applied to the 8 audio pairs of a mini set, which cannot decide it: the model stays `implemented`, the row
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
        ("inconclusive", "quantized_gate", 10.0, 8, 0, 0)
    assert ni.items_needed is not None and 8 < ni.items_needed <= 40
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
