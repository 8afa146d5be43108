"""The capability probe before a soak's load: qualify's probe (orchestrator/qualify/probe.py), so that a server
that refuses the workload stops the soak at once with `unsupported` and the evidence, not after hours of failing
requests. Journals the `capability` phase and its checks; starts no load."""

from __future__ import annotations

from orchestrator.config import ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import ArmRequest, Dataset
from orchestrator.events import ModelResult, ResultRow
from orchestrator.qualify.context import StageFailed
from orchestrator.qualify.probe import ProbeSession, capability_probe
from orchestrator.run import RunScope
from orchestrator.spine.logs import say
from orchestrator.spine.ports import Toolkit

__all__ = ["PROBE_PLAN", "probe_before_load"]

PROBE_PLAN = ("capability: probed before the load, as qualify does; a server that cannot answer audio questions "
              "ends the soak there, unsupported (exit 1), with the probe's evidence")


async def probe_before_load(run: RunScope, toolkit: Toolkit, model: ModelConfig, dataset: Dataset,
                            rows: list[ArmRequest], correlator: Correlator, base_url: str) -> str:
    """Probe the served model; "" when it can do audio QA, else why not (journaled with its evidence, and the
    model's result row). Blocks for the probe's requests; cancellation leaves its window open in `correlator`."""
    cfg = run.config
    host = ProbeSession(source="soak", bus=run.bus, toolkit=toolkit, model=model, dataset=dataset, requests=rows,
                        correlator=correlator, request_timeout_s=cfg.workload.request_timeout_s,
                        max_tokens=cfg.workload.max_tokens)
    try:
        await capability_probe(host, base_url, run.run_dir / "wire", in_flight=cfg.workload.concurrency or 1)
    except StageFailed as exc:
        reason = f"{exc.status} at the capability probe, before any load: {exc.reason}"
        await run.bus.publish(ModelResult(source="soak", model=model.name, status=exc.status,
                                          failed_stage="capability",
                                          row=ResultRow(**model.identity_fields(), reason=reason, noninferiority=None,
                                                        keyed_by=None)))
        say(f"soak: {reason}")
        return reason
    return ""
