"""End to end: `aqbench ab` with real AIPerf and two real reference servers running at once (started afresh for
every pair, the default), the candidate
with a planted tail regression (30 % of requests 3 s slower, beyond the baseline's own p90 of about 1.3 s: its speech-recognition items): exit 1, the p90 figures regressed, every
block accounted, the plan journaled before the first block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reference_run import aqbench, only_run, write_config

from orchestrator.events import (
    AbPhase,
    AccountingChecked,
    AiperfStarted,
    PhaseStarted,
    ServerRecord,
    ServerSpawned,
    VerdictReached,
)
from orchestrator.spine.journal import read_journal

# Beside the serial lane: its blocks interleave A and B on fresh servers every pair, so load from other runs moves
# both sides alike, and the planted fault (2 s on 30 %) dwarfs what such load adds to a p90.
pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.beside, pytest.mark.timeout(600)]

def test_ab_catches_a_planted_tail_regression(tmp_path: Path) -> None:
    """Three pairs of 50-request blocks (p90 needs 50): the candidate's p90 regresses and ab exits 1. Its fault
    (2 s on 30 % of requests) puts its p90 beyond the baseline's (about 1.3 s on the loaded suite host); each
    second more of it costs the serial lane ~22 s."""
    configs = {side: write_config(tmp_path / f"{side}.toml", out=tmp_path / "runs", name="ab", server_args=args,
                                  deterministic=True)
               for side, args in (("a", []), ("b", ["--fault-latency-ms", "2000", "--fault-latency-share", "0.3"]))}
    proc = aqbench("ab", "--baseline", str(configs["a"]), "--candidate", str(configs["b"]), "--pairs", "3",
                   "--block-requests", "50", "--block-warmup", "2", "--seed", "1", timeout=560)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-4000:]
    run = only_run(tmp_path / "runs")
    result = json.loads((run / "ab.json").read_text())
    changes = {f["key"]: f["change"] for f in result["figures"]}
    assert result["outcome"] == "regressed" and changes["latency.model_call.p90"] == "regressed", changes
    assert changes["errors.all"] != "regressed" and len(result["pairs"]) == 3
    events, _torn = read_journal(run / "events.jsonl")
    started = [e for e in events if isinstance(e, AiperfStarted)]  # every block with no-spin timing, the default
    assert started and all("AQBENCH_TIMING_WAIT=1" in e.shell for e in started)
    [plan] = [e.detail for e in events if isinstance(e, PhaseStarted) and isinstance(e.detail, AbPhase)]
    first_block = next(i for i, e in enumerate(events) if isinstance(e, PhaseStarted) and e.phase == "aiperf")
    assert events.index(next(e for e in events if isinstance(e, PhaseStarted) and e.detail is plan)) < first_block
    assert sorted(plan.order) == sorted("AAABBB") and plan.baseline_url != plan.candidate_url and plan.fresh_pairs
    # Fresh servers every pair: both sides spawned once per pair, each before its pair's first block.
    spawned = [i for i, e in enumerate(events) if isinstance(e, ServerSpawned)]
    blocks = [i for i, e in enumerate(events) if isinstance(e, PhaseStarted) and e.phase == "aiperf"]
    assert len(spawned) == 6 and all(spawned[2 * p + 1] < blocks[2 * p] < blocks[2 * p + 1] < spawned[2 * p + 2]
                                     for p in range(2)), (spawned, blocks)
    assert "both running, fresh every pair" in (run / "ab.md").read_text()
    accounted = [e for e in events if isinstance(e, AccountingChecked)]
    assert len(accounted) == 6 and all(e.balanced and e.issued.get("profiling") == 50 for e in accounted)
    assert "regressed: " in proc.stdout
    # The candidate's server records which requests it slowed: 30 % of its half of the records (about 150;
    # fresh servers every pair, the share drawn from each request's id), within 3 binomial sd; the baseline's none.
    records = [e for e in events if isinstance(e, ServerRecord) and e.route == "/v1/chat/completions"]
    slowed = [e for e in records if e.fault_latency_ms]
    assert len(records) >= 300 and 0.19 < len(slowed) / (len(records) / 2) < 0.41, (len(records), len(slowed))
    assert all(e.fault_latency_ms == 2000.0 and (e.model_call_ms or 0) >= 2000 for e in slowed)
    # Every answer checked against the dataset as qualify does: a correctness figure per arm, none regressed.
    judged = [e for e in events if isinstance(e, VerdictReached) and e.source == "ab"]
    assert len(judged) == 300 and {f"correctness.{arm}" for arm in ("audio", "transcript")} <= set(changes)
    assert changes["correctness.audio"] != "regressed", result["figures"]
