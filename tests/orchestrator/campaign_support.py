"""A campaign journal of two models on two nodes, for the campaign and report tests."""

from __future__ import annotations

from pathlib import Path

from orchestrator.campaign.events import (
    AttemptEnded,
    AttemptPlaced,
    CampaignFinished,
    CampaignStarted,
    KeptFile,
    ModelFinished,
    ModelSubmitted,
    NodeFacts,
    NodeLost,
)
from orchestrator.campaign.journal import CampaignJournal

ROOT = Path(__file__).resolve().parents[2]
S = 1_000_000_000
A, B = "a" * 56, "b" * 56


def journal(tmp_path: Path, *, finish_all: bool = True) -> Path:
    """A campaign of two models on two nodes: m1 lost its node once and finished on the other; m2 failed."""
    j = CampaignJournal(tmp_path / "campaign.jsonl")
    t = 1_000 * S
    j.write(CampaignStarted(unix_ns=t, campaign_id="campaign-x", models=["m1", "m2"], address="127.0.0.1:1",
                            nodes=[NodeFacts(node_id=A, address="10.0.0.1"), NodeFacts(node_id=B, address="10.0.0.2")]))
    j.write(ModelSubmitted(unix_ns=t, model="m1", attempt=1))
    j.write(ModelSubmitted(unix_ns=t, model="m2", attempt=1))
    j.write(AttemptPlaced(unix_ns=t + S, model="m1", attempt=1, node_id=A, started_unix_ns=t + S))
    j.write(AttemptPlaced(unix_ns=t + S, model="m2", attempt=1, node_id=B, started_unix_ns=t + S))
    j.write(NodeLost(unix_ns=t + 3 * S, node_id=A, reason="NodeDiedError: gone"))
    j.write(AttemptEnded(unix_ns=t + 3 * S, model="m1", attempt=1, node_id=A, ended="node-lost",
                         reason="NodeDiedError: gone", retry=True))
    j.write(ModelSubmitted(unix_ns=t + 3 * S, model="m1", attempt=2))
    j.write(AttemptEnded(unix_ns=t + 5 * S, model="m2", attempt=1, node_id=B, ended="finished", status="failed"))
    j.write(ModelFinished(unix_ns=t + 5 * S, model="m2", status="failed", failed_stage="correctness",
                          reason="pass rate 3/8", attempts=1, reproduce="aqbench qualify --model m2"))
    if finish_all:
        j.write(AttemptPlaced(unix_ns=t + 5 * S, model="m1", attempt=2, node_id=B, started_unix_ns=t + 5 * S))
        j.write(AttemptEnded(unix_ns=t + 9 * S, model="m1", attempt=2, node_id=B, ended="finished",
                             status="aiperf-qualified"))
        j.write(ModelFinished(unix_ns=t + 9 * S, model="m1", status="aiperf-qualified", attempts=2,
                              reproduce="aqbench qualify --model m1",
                              kept_on_node=[KeptFile(path="/n/big.parquet", size_bytes=9 << 30)]))
        j.write(CampaignFinished(unix_ns=t + 10 * S, status="failed", exit_code=1))
    j.close()
    return tmp_path / "campaign.jsonl"


