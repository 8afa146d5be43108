"""Synthetic `aqbench ab` journals: blocks in the plan's order, latencies from per-item costs times a
machine factor that drifts over the session (and may jump, as when a CPU hog starts), times request noise."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
from config_support import make_config

from orchestrator.ab.blocks import load_session, window_name
from orchestrator.ab.plan import MIN_PAIRS, block_order
from orchestrator.ab.power import PLAN_NOISE, plan_power
from orchestrator.ab.sequential import Boundary, critical_values
from orchestrator.ab.verdict import AbResult, decide_session, stop_reason
from orchestrator.config import CompareConfig
from orchestrator.events import (
    AbPhase,
    AiperfRunPhase,
    AnyEvent,
    HostFacts,
    HostSampled,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RunFinished,
    RunStarted,
    VerdictReached,
)
from orchestrator.spine.journal import encode_event

T0 = 1_764_547_200_000_000_000


@dataclass(frozen=True)
class AbSpec:
    """One synthetic session. The candidate (B) gets the planted regression; both sides the machine's drift."""

    pairs: int = 6
    block_requests: int = 40
    items: int = 20
    seed: int = 0
    noise: float = 0.2
    tail_df: float = 3.0
    drift: float = 0.3  # the machine factor grows linearly by this much over the session
    hog_at: float | None = None  # fraction of the session after which the machine is `hog` slower
    hog: float = 0.5
    scale: float = 1.0
    slow_item_share: float = 0.0
    slow_request_share: float = 0.0
    slow_factor: float = 1.0
    ar: float = 0.0  # AR(1) coefficient of the request noise: neighbouring requests share their luck
    hog_blocks: float = 0.0  # share of blocks (drawn per block) under a CPU hog `hog` slower
    wrong_share: float = 0.0  # share of the candidate's answers wrong (the baseline answers every item right)
    boundary: Boundary | None = "obrien-fleming"  # the plan's looks; None: a fixed plan (no critical_t)
    plan_noise: float = PLAN_NOISE  # the pair noise the plan's power statement assumes
    instance_allowance: float = 0.0  # both servers running all session (--instance-allowance; ab's default 0); 0: also --sequential
    instance_tail_allowance: float = 0.0


def write_session(folder: Path, spec: AbSpec) -> Path:
    """Write `folder`/events.jsonl; returns the journal."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    costs = 200.0 * np.random.default_rng(7).lognormal(0.0, 0.5, spec.items)
    slow_items = set(np.random.default_rng(8).permutation(spec.items)[:round(spec.slow_item_share * spec.items)].tolist())
    order = block_order(spec.pairs, spec.seed)
    total = len(order) * spec.block_requests
    seq = 0
    journal = folder / "events.jsonl"
    with journal.open("wb") as fh:

        def put(ev: AnyEvent) -> None:
            nonlocal seq
            seq += 1
            fh.write(encode_event(msgspec.structs.replace(ev, seq=seq, ts_ns=T0 + seq, run_id="ab-run")) + b"\n")

        put(RunStarted(command="ab", config=make_config(), host=HostFacts(hostname="box", cpu="cpu", cpus=2)))
        critical = critical_values(spec.pairs, 0.9, spec.boundary) if spec.boundary else []
        put(PhaseStarted(phase="ab", model="m", detail=AbPhase(order=order, seed=spec.seed, confidence=0.9,
                                                                block_requests=spec.block_requests,
                                                                boundary=spec.boundary or "", critical_t=critical,
                                                                latency_tolerance=0.05, tail_tolerance=0.05,
                                                                instance_allowance=spec.instance_allowance,
                                                                instance_tail_allowance=spec.instance_tail_allowance,
                                                                power=plan_power(
                                                                    spec.pairs, spec.block_requests, 0.05, 0.9,
                                                                    spec.boundary, spec.plan_noise,
                                                                    spec.instance_allowance))))
        n = 0
        luck = 0.0
        for k, side in enumerate(order):
            window = window_name("m", k, side)
            hogged = rng.random() < spec.hog_blocks
            put(PhaseStarted(phase="aiperf", model="m", detail=AiperfRunPhase(window=window)))
            for i in range(spec.block_requests):
                t = n / total
                machine = (1.0 + spec.drift * t) * (1.0 + spec.hog if hogged or (
                    spec.hog_at is not None and t >= spec.hog_at) else 1.0)
                item = i % spec.items
                luck = spec.ar * luck + np.sqrt(1.0 - spec.ar ** 2) * float(rng.standard_t(spec.tail_df))
                value = float(costs[item]) * machine * float(np.exp(spec.noise * luck))
                if side == "B":
                    value *= spec.scale
                    if item in slow_items or rng.random() < spec.slow_request_share:
                        value *= spec.slow_factor
                put(RequestCorrelated(request_id=f"r{n}", window=window, phase="profiling", conversation_id=f"c{n}",
                                      item_id=f"item-{item:03d}", arm="audio", ok=True, cause="ok", http_status=200,
                                      request_latency_ms=value + 3.0, handler_ms=value + 1.0, model_call_ms=value))
                wrong = side == "B" and rng.random() < spec.wrong_share
                put(VerdictReached(source="ab", model="m", item_id=f"item-{item:03d}", arm="audio", path="aiperf",
                                   verdict="wrong" if wrong else "correct", request_id=f"r{n}"))
                n += 1
            busy = hogged or (spec.hog_at is not None and n / total >= spec.hog_at)
            put(HostSampled(source="host", interval_s=2.0, load1=3.0 if busy else 1.0, cpus=2, busy_cpus=1.0,
                            run_cpus=0.8, outside_cpus=1.5 if busy else 0.1, steal_share=0.0))
            put(PhaseFinished(phase="aiperf", model="m", outcome="passed", detail=AiperfRunPhase(window=window)))
        put(PhaseFinished(phase="ab", model="m", outcome="finished", detail=AbPhase(blocks_run=len(order),
                                                                                    stop_reason="every planned block ran")))
        put(RunFinished(status="ok"))
    return journal


def looked_verdict(journal: Path, cfg: CompareConfig) -> AbResult:
    """The verdict the session would reach, looking after every pair from the third on as `aqbench ab` does
    (orchestrator/ab/session.py `_look`) and stopping at the first look where every figure is decided."""
    session = load_session(journal)
    planned = len(session.plan.order) // 2 if session.plan else 0
    for k in range(MIN_PAIRS, planned):
        result = decide_session(session, cfg, upto_pairs=k)
        if stop_reason(result):
            return result
    return decide_session(session, cfg)
