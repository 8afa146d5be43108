"""What a sweep does before any load: qualify's capability probe, a timed sample of the baseline window's own
rows, the plan stated; and the hold that lets the first batch's AIPerf process start beside them.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import msgspec

from orchestrator.config import ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import ArmRequest, Dataset
from orchestrator.dataset.clip_cache import clip_cache_dir
from orchestrator.events import ModelResult, PhaseFinished, PhaseStarted, ResultRow, SloPower, SweepPhase
from orchestrator.qualify.context import StageFailed
from orchestrator.qualify.probe import ProbeSession, capability_probe
from orchestrator.run import RunScope
from orchestrator.spine.logs import say
from orchestrator.spine.ports import ChatAnswer, ChatSession, PhaseGates, Toolkit
from orchestrator.supervision.supervisor import ServerHandle
from orchestrator.sweep.planned import planned_durations
from orchestrator.sweep.search import extensions

__all__ = ["FirstHold", "probe_and_sample", "state_plan"]


# AIPerf 0.13.0 takes 4-8 s to start on 2 cores, and the capability probe's length grows with the server's latency
# (5.7 s at 300 ms a request on the reference server; a real model's seconds-long answers make it longer still). So
# the first batch is spawned once the server is ready, beside the probe, every planned load held at its gate
# (FirstHold). The baseline's sample waits until AIPerf sits idle at its first gate, so that AIPerf's start-up never
# slows the latencies the baseline is planned by (a slower sample would plan it longer and flatter the sweep's
# wall-time ratio). Then the plan is stated and the gates open; a server that fails the probe has every held load
# skipped, and AIPerf exits having sent nothing (no window started).
class FirstHold:
    """The first batch's planned loads, held at their gates while the probe and the sample run: `at_gate` is set
    once AIPerf waits at the first one (or its process ended before), and `release(n)` runs the first `n` held
    loads in order and skips the rest (0: the sweep stopped before any load)."""

    def __init__(self) -> None:
        self.at_gate = anyio.Event()
        self._released = anyio.Event()
        self._decided = anyio.Event()
        self._run = 0
        self.released_at: float | None = None  # time.monotonic() at release

    def release(self, n: int) -> None:
        if not self._released.is_set():
            self._run, self.released_at = n, time.monotonic()
            self._released.set()

    async def released(self) -> None:
        await self._released.wait()

    async def decided(self) -> None:
        """Every held load's gate is decided (what waits on the held loads' requests may read `gates.ran`)."""
        await self._decided.wait()

    def ended(self) -> None:
        """The batch's process ended: nothing waits at a gate any more."""
        self.at_gate.set()

    async def keep(self, gates: PhaseGates, held: list[str]) -> None:
        """Say when AIPerf reaches the first held load's gate, then decide every held load once released."""
        while held:  # AIPerf writes its `ready` file there (a file to poll, not an event)
            if gates.reached(held[0]):
                break
            await anyio.sleep(0.02)
        self.at_gate.set()
        await self._released.wait()
        for i, name in enumerate(held):
            gates.decide(name, run=i < self._run)
        self._decided.set()


async def probe_and_sample(run: RunScope, toolkit: Toolkit, model: ModelConfig, dataset: Dataset,
                           rows: list[ArmRequest], correlator: Correlator, handle: ServerHandle,
                           sample: list[ArmRequest],
                           hold: FirstHold | None = None) -> int | tuple[list[float], list[float]]:
    """qualify's capability probe against the served model; on a server that cannot do audio QA the sweep
    stops there with the probe's evidence (exit 1), else the latencies (s) of its answered sweep rows, and of
    `sample` (the baseline's sampled rows) asked one at a time after it, in the window `<model>/plan` (once AIPerf
    waits at its gate, where a `hold` is given)."""
    cfg = run.config
    host = _TimedProbe(source="sweep", bus=run.bus, toolkit=toolkit, model=model, dataset=dataset, requests=rows,
                       correlator=correlator, request_timeout_s=cfg.workload.request_timeout_s,
                       max_tokens=cfg.workload.max_tokens)
    try:
        await capability_probe(host, handle.base_url, run.run_dir / "aiperf" / "wire", cache=clip_cache_dir(cfg.run),
                               in_flight=cfg.workload.concurrency or 1)  # its pairs at the workload's concurrency
        probe_s, sampled = list(host.latencies_s), []
        if sample:
            if hold is not None:
                await hold.at_gate.wait()  # AIPerf idle at its gate: its start-up does not slow the sample
            async with host.client(handle.base_url) as client:
                for req in sample:
                    answer = await host.ask(client, req, "plan")
                    if answer.status == 200 and answer.latency_ms > 0:
                        sampled.append(answer.latency_ms / 1000.0)
            await host.close_window("plan")
        return probe_s, sampled
    except StageFailed as exc:
        await handle.stop()
        reason = f"{exc.status} at the capability probe, before any load: {exc.reason}"
        await run.bus.publish(ModelResult(source="sweep", model=model.name, status=exc.status, failed_stage="capability",
                                          row=ResultRow(**model.identity_fields(), reason=reason, noninferiority=None,
                                                        keyed_by=None)))
        await run.bus.publish(PhaseFinished(source="sweep", phase="model", model=model.name, outcome=exc.status,
                                            reason=reason))
        say(f"sweep: {reason}")
        run.finish(status="failed", exit_code=1, reason=reason)
        return 1


async def state_plan(run: RunScope, model: ModelConfig, argv: list[str], detects: list[SloPower], *, base: bool,
                     probe_s: list[float], sample_s: list[float], precision_plan: list[str] | None = None) -> float | None:
    """Say before any load (stderr, and the `sweep` phase's start in the journal) what a point can decide at its
    planned requests, and each window's planned duration, the baseline's included (it is real work the sweep
    always does), so that wall time can be set against it (bench/sweep_wall.py); returns the baseline's."""
    cfg = run.config
    sw = cfg.sweep
    limits = {k: float(v) for k, v in msgspec.to_builtins(cfg.slo).items()
              if isinstance(v, float | int) and not isinstance(v, bool)}
    say("sweep: each point of " + f"{sw.requests_per_point} requests can decide:\n  "
        + "\n  ".join(d.statement for d in detects))
    doublings = extensions(sw.points, sw.extend)
    baseline_s, planned = planned_durations(sw.mode, list(sw.points), requests=sw.requests_per_point,
                                            warmup=cfg.workload.warmup_requests, base=base, probe_s=probe_s,
                                            sample_s=sample_s, extensions=doublings)
    say("sweep: planned: " + "; ".join(planned))
    await run.bus.publish(PhaseStarted(source="sweep", phase="sweep", model=model.name, detail=SweepPhase(
        mode=sw.mode, points=list(sw.points), requests_per_point=sw.requests_per_point,
        warmup_requests=cfg.workload.warmup_requests, slo=limits, argv=list(argv), detects=detects,
        baseline_planned_s=baseline_s, planned=planned, extensions=doublings, precision=sw.precision,
        precision_plan=list(precision_plan or []))))
    return baseline_s


class _TimedProbe(ProbeSession):
    """The capability probe, keeping the latency of each of its answered requests that is one of the sweep's own
    rows (not the probe's text-only or other-arm variants), known before any load: the baseline window's plan
    where no sample of its rows was timed (asked at the workload's concurrency, so an estimate only)."""

    def __init__(self, **kw: Any) -> None:  # ProbeSession's own keyword arguments, passed through
        super().__init__(**kw)
        self.latencies_s: list[float] = []

    async def ask(self, client: ChatSession, req: ArmRequest, stage: str) -> ChatAnswer:
        answer = await super().ask(client, req, stage)
        if answer.status == 200 and answer.latency_ms > 0 and req in self.requests:
            self.latencies_s.append(answer.latency_ms / 1000.0)
        return answer
