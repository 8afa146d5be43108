"""End to end: `aqbench ab` with real AIPerf and two real reference servers running at once, the candidate
with a planted tail regression (30 % of requests 2 s slower): exit 1, the p90 figures regressed, every
block accounted, the plan journaled before the first block."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.events import AbPhase, AccountingChecked, PhaseStarted, VerdictReached
from orchestrator.journal import read_journal

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(600)]

_CONFIG = """
[run]
output_dir = "{out}"
name = "ab"

[server]
kind = "reference"
replicas = 2
startup_timeout_s = 120.0
stop_grace_s = 10.0

[[models]]
name = "reference-audioqa"
family = "aqbench-reference"
checkpoint = "aqbench/reference-cascade"
server_args = {server_args}

[models.correctness]
min_pass_rate = 0.0
deterministic = true

[dataset]
path = "{dataset}"

[workload]
warmup_requests = 2
requests = 40
concurrency = 2
request_timeout_s = 60.0
arms = ["audio", "transcript"]
deadline_s = 300.0
"""


def test_ab_catches_a_planted_tail_regression(tmp_path: Path) -> None:
    """Three pairs of 50-request blocks (p90 needs 50): the candidate's p90 regresses and ab exits 1."""
    configs = {}
    for side, args in (("a", "[]"), ("b", '["--fault-latency-ms", "2000", "--fault-latency-share", "0.3"]')):
        configs[side] = tmp_path / f"{side}.toml"
        configs[side].write_text(_CONFIG.format(out=tmp_path / "runs", server_args=args,
                                                dataset=ROOT / "datasets" / "audioqa-v1"))
    proc = subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", "ab", "--baseline",
                           str(configs["a"]), "--candidate", str(configs["b"]), "--pairs", "3", "--block-requests",
                           "50", "--block-warmup", "2", "--seed", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=560)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-4000:]
    [run] = list((tmp_path / "runs").iterdir())
    result = json.loads((run / "ab.json").read_text())
    changes = {f["key"]: f["change"] for f in result["figures"]}
    assert result["outcome"] == "regressed" and changes["latency.model_call.p90"] == "regressed", changes
    assert changes["errors.all"] != "regressed" and len(result["pairs"]) == 3
    events, _torn = read_journal(run / "events.jsonl")
    [plan] = [e.detail for e in events if isinstance(e, PhaseStarted) and isinstance(e.detail, AbPhase)]
    first_block = next(i for i, e in enumerate(events) if isinstance(e, PhaseStarted) and e.phase == "aiperf")
    assert events.index(next(e for e in events if isinstance(e, PhaseStarted) and e.detail is plan)) < first_block
    assert sorted(plan.order) == sorted("AAABBB") and plan.baseline_url != plan.candidate_url
    accounted = [e for e in events if isinstance(e, AccountingChecked)]
    assert len(accounted) == 6 and all(e.balanced and e.issued.get("profiling") == 50 for e in accounted)
    assert "regressed: " in proc.stdout
    # Every answer checked against the dataset as qualify does: a correctness figure per arm, none regressed.
    judged = [e for e in events if isinstance(e, VerdictReached) and e.source == "ab"]
    assert len(judged) == 300 and {f"correctness.{arm}" for arm in ("audio", "transcript")} <= set(changes)
    assert changes["correctness.audio"] != "regressed", result["figures"]
