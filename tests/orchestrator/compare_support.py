"""Synthetic run journals for `aqbench compare` tests: seeded latency distributions, written through
orchestrator.spine.journal.encode_event exactly as a run-aiperf or qualify run journals them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np
from config_support import make_config

from orchestrator.events import (
    AiperfRunPhase,
    AiperfStarted,
    AnswerIncomplete,
    AnyEvent,
    DatasetPhase,
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
ARGV = ["aiperf", "profile", "--model", "m", "--url", "http://127.0.0.1:{port}", "--endpoint-type", "chat",
        "--input-file", "/runs/{run}/aiperf/inputs.jsonl", "--request-count", "{requests}",
        "--warmup-request-count", "2", "--concurrency", "{concurrency}", "--artifact-dir", "/runs/{run}/artifacts"]


@dataclass
class RunSpec:
    """One synthetic run. Item costs come from `dataset_seed` (shared by comparable runs); per-request
    noise from `seed`. `answers` overrides the answer text of an item (`item-003/audio`: text)."""

    model: str = "m"
    requests: int = 400
    items: int = 40
    arms: tuple[str, ...] = ("audio",)
    seed: int = 0
    dataset_seed: int = 7
    dataset_identity: str = "sha256:aaaa"
    concurrency: int = 2
    model_call_extra_ms: float = 0.0
    noise: float = 0.25
    error_rate: float = 0.0  # each request fails with http_5xx with this probability
    deterministic: bool = True
    verdicts: bool = True
    answers: Mapping[str, str] = field(default_factory=dict)
    wrong: frozenset[str] = frozenset()  # items (`item/arm`) scored wrong
    incomplete: Mapping[str, list[str]] = field(default_factory=dict)  # item/arm -> defects
    finished: bool = True
    command: str = "run-aiperf"
    aiperf_version: str = "0.13.0"
    aiperf_args: tuple[str, ...] = ()  # more AIPerf flags after ARGV's
    timing_scope: str = "public_task_call_wall"
    # Realistic noise: request noise from Student's t on the log scale (heavy tails) when `tail_df` is set;
    # an AR(1) factor on the log scale (`ar_sd` its stationary sd, `ar_phi` its lag-1 correlation); and a
    # linear drift of the whole run (`drift`: the factor reached by the last request, minus 1).
    tail_df: float | None = None
    ar_phi: float = 0.0
    ar_sd: float = 0.0
    drift: float = 0.0
    # Planted regressions: every latency times `scale`; this share of items (the same items in every run of
    # one dataset_seed) and, independently, this share of requests (drawn per request) times `slow_factor`.
    scale: float = 1.0
    slow_item_share: float = 0.0
    slow_request_share: float = 0.0
    slow_factor: float = 1.0
    outside_cpus: float | None = None  # HostSampled every 100 requests with this outside CPU (None: no samples)


def item_costs(spec: RunSpec) -> np.ndarray:
    """Each (item, arm)'s typical model-call time in ms: lognormal around 200 ms."""
    rng = np.random.default_rng(spec.dataset_seed)
    return 200.0 * rng.lognormal(0.0, 0.5, size=spec.items * len(spec.arms))


def _noise(spec: RunSpec, rng: np.random.Generator) -> np.ndarray:
    """Each request's multiplicative noise: heavy-tailed or lognormal, times AR(1) and drift factors."""
    n = spec.requests
    log = spec.noise * (rng.standard_t(spec.tail_df, n) if spec.tail_df else rng.standard_normal(n))
    if spec.ar_sd:
        shocks = rng.standard_normal(n) * spec.ar_sd * np.sqrt(1.0 - spec.ar_phi ** 2)
        state = rng.standard_normal() * spec.ar_sd
        ar = np.empty(n)
        for i in range(n):
            state = spec.ar_phi * state + shocks[i]
            ar[i] = state
        log += ar
    return np.exp(log) * (1.0 + spec.drift * np.arange(n) / max(1, n - 1))


def write_run(folder: Path, spec: RunSpec) -> Path:
    """Write `folder`/events.jsonl for `spec`; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    keys = [(f"item-{i:03d}", arm) for arm in spec.arms for i in range(spec.items)]
    costs = item_costs(spec)
    cfg = make_config(models=[{"name": spec.model, "correctness": {"deterministic": spec.deterministic}}],
                      workload={"concurrency": spec.concurrency, "requests": spec.requests, "arms": list(spec.arms)})
    window = f"{spec.model}/aiperf"
    argv = [a.format(port=8000 + spec.seed, run=f"r{spec.seed}", requests=spec.requests, concurrency=spec.concurrency)
            for a in ARGV] + list(spec.aiperf_args)
    seq = 0
    with (folder / "events.jsonl").open("wb") as fh:

        def put(ev: AnyEvent, ts: int) -> None:
            nonlocal seq
            seq += 1
            fh.write(encode_event(msgspec.structs.replace(ev, seq=seq, ts_ns=ts, run_id=f"run-{spec.seed}")) + b"\n")

        put(RunStarted(command=spec.command, config=cfg, tool_versions={"aqbench": "0.1.0", "aiperf": spec.aiperf_version},
                       host=HostFacts(hostname="box", cpu="cpu", cpus=2)), T0)
        put(PhaseFinished(phase="dataset", outcome="passed", detail=DatasetPhase(
            name="audioqa-v1", identity=spec.dataset_identity, path="/datasets/audioqa-v1", items=spec.items)), T0 + 1)
        put(PhaseStarted(phase="aiperf", model=spec.model, detail=AiperfRunPhase(arms=list(spec.arms))), T0 + 2)
        put(AiperfStarted(window=window, argv=argv, shell=" ".join(argv), artifact_dir="/a",
                          version=spec.aiperf_version), T0 + 3)
        model_call = costs[np.arange(spec.requests) % len(keys)] * _noise(spec, rng) * spec.scale \
            + spec.model_call_extra_ms
        slow_items = np.random.default_rng(spec.dataset_seed + 1).permutation(len(keys))[
            :round(spec.slow_item_share * len(keys))]
        slow = np.isin(np.arange(spec.requests) % len(keys), slow_items) | (rng.random(spec.requests) < spec.slow_request_share)
        model_call = np.where(slow, model_call * spec.slow_factor, model_call)
        overhead = rng.exponential(3.0, spec.requests)
        fails = rng.random(spec.requests) < spec.error_rate
        clock = T0 + 10**9
        for i in range(spec.requests):
            item_id, arm = keys[i % len(keys)]
            name = f"{item_id}/{arm}"
            call = float(model_call[i])
            handler, client = call + 1.5, call + 1.5 + float(overhead[i])
            clock += int(client * 1e6 / spec.concurrency)
            failed = bool(fails[i])
            if spec.outside_cpus is not None and i % 100 == 99:
                put(HostSampled(source="host", interval_s=2.0, load1=1.0 + spec.outside_cpus, cpus=2, busy_cpus=1.5,
                                run_cpus=0.5, outside_cpus=spec.outside_cpus, steal_share=0.01), clock)
            put(RequestCorrelated(
                request_id=f"req-{i:07d}", window=window, phase="profiling", conversation_id=f"{name}#0",
                item_id=item_id, arm=arm, ok=not failed, cause="http_5xx" if failed else "ok",
                http_status=500 if failed else 200, answer=None if failed else spec.answers.get(name, f"answer {item_id}"),
                request_start_ns=clock - int(client * 1e6), request_end_ns=clock, request_latency_ms=client,
                handler_ms=handler, model_call_ms=call, timing_scope=spec.timing_scope), clock)
        if spec.verdicts:
            for item_id, arm in keys:
                name = f"{item_id}/{arm}"
                if name in spec.incomplete:
                    put(AnswerIncomplete(model=spec.model, path="http", defects=spec.incomplete[name], item_id=item_id,
                                         arm=arm, answer=spec.answers.get(name, f"answer {item_id}")), clock)
                put(VerdictReached(model=spec.model, item_id=item_id, arm=arm, path="http",
                                   verdict="wrong" if name in spec.wrong or name in spec.incomplete else "correct",
                                   answer=spec.answers.get(name, f"answer {item_id}"), item_kind="fact"), clock)
        put(PhaseFinished(phase="aiperf", model=spec.model, outcome="passed"), clock + 1)
        if spec.finished:
            put(RunFinished(status="ok"), clock + 2)
    return folder
