"""A campaign attempt given a GPU carries that GPU's identity into the campaign's rows."""

from __future__ import annotations

from orchestrator.campaign.events import (
    AttemptEnded,
    AttemptPlaced,
    CampaignFinished,
    CampaignStarted,
    ModelFinished,
    ModelSubmitted,
    NodeFacts,
)
from orchestrator.campaign.fold import fold_campaign
from orchestrator.campaign.journal import CampaignJournal
from orchestrator.campaign.report import render_campaign_markdown
from orchestrator.events import GpuIdentity

S = 1_000_000_000
H100 = GpuIdentity(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-32fe8bdc-9d76-0543-b0ca-7c2c04aa4d46",
                   driver_version="580.159.04", cuda_version="13.0")


def test_the_row_names_the_gpu_the_attempt_ran_on(tmp_path) -> None:
    """AttemptPlaced's GPU identity reaches the model's attempt row and the Markdown report."""
    j = CampaignJournal(tmp_path / "campaign.jsonl")
    t = 1_000 * S
    j.write(CampaignStarted(unix_ns=t, campaign_id="c", models=["m1"], address="127.0.0.1:1",
                            nodes=[NodeFacts(node_id="a" * 56, address="10.0.0.1")]))
    j.write(ModelSubmitted(unix_ns=t, model="m1", attempt=1))
    j.write(AttemptPlaced(unix_ns=t + S, model="m1", attempt=1, node_id="a" * 56, gpu_ids=["0"], gpus=[H100],
                          started_unix_ns=t + S))
    j.write(AttemptEnded(unix_ns=t + 5 * S, model="m1", attempt=1, node_id="a" * 56, ended="finished",
                         status="aiperf-qualified"))
    j.write(ModelFinished(unix_ns=t + 5 * S, model="m1", status="aiperf-qualified", attempts=1))
    j.write(CampaignFinished(unix_ns=t + 6 * S, status="ok", exit_code=0))
    j.close()
    report = fold_campaign(tmp_path / "campaign.jsonl")
    [row] = report.rows
    assert row.attempts[0].gpus == [H100]
    assert "#1 on 10.0.0.1 GPU 0 NVIDIA H100 80GB HBM3 GPU-32fe8bdc-9d76-0543-b0ca-7c2c04aa4d46: finished" \
        in render_campaign_markdown(report)
