"""`aqbench ab`'s session: both servers supervised, A and B blocks of real AIPerf load in the seeded order,
each block its own window, accounted with warmup excluded; all journaled. Decides nothing (verdict.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec

from orchestrator.ab.answers import judge_answers
from orchestrator.ab.blocks import window_name
from orchestrator.ab.plan import block_order, servers_text, t_quantile
from orchestrator.ab.power import (
    INSTANCE_ALLOWANCE,
    INSTANCE_TAIL_ALLOWANCE,
    PLAN_NOISE,
    describe_power,
    plan_power,
)
from orchestrator.ab.sequential import Boundary, critical_values, describe
from orchestrator.ab.verdict import AbResult, decide, stop_reason
from orchestrator.base.errors import UsageError
from orchestrator.config import CompareConfig, Config, ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import (
    ArmRequest,
    interleave_kinds,
    load_dataset,
    parse_session_key,
    prepare_arms,
    resolve_dataset_path,
    write_aiperf_input,
)
from orchestrator.dataset.clip_cache import clip_cache_dir, facts_dir
from orchestrator.events import AbPhase, AiperfRunPhase, DatasetPhase, PhaseFinished, PhaseStarted
from orchestrator.qualify.answers import AnswerBook
from orchestrator.qualify.collect import WindowCollector
from orchestrator.run import Interrupt, RunScope, open_run
from orchestrator.spine.logs import get_logger, say
from orchestrator.spine.ports import AiperfFacts, Toolkit
from orchestrator.supervision.server_spec import ServerSpec
from orchestrator.supervision.supervisor import ServerHandle, supervise, supervised

__all__ = ["AbOptions", "check_comparable", "run_ab_session"]

log = get_logger("aqbench.ab")
_COLLECT_TIMEOUT_S = 30.0  # for the correlator's accounting to reach the block's collector (as qualify waits)


class AbOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose."""

    baseline: str
    candidate: str
    model: str = ""
    pairs: int = 6
    block_requests: int = 40
    block_warmup: int = 4
    seed: int = 0
    max_duration_s: float | None = None
    sequential: bool = False
    # Both servers up for the whole session instead of started afresh before every pair (slow-loading servers).
    keep_servers: bool = False
    boundary: Boundary = "obrien-fleming"
    stop_early: bool = True
    strict: bool = False
    plan_noise: float = PLAN_NOISE  # the pair noise the power statement assumes (orchestrator/ab/power.py)
    # What two server processes may differ by, both running all session (--keep-servers; latency: relative;
    # tail share: points); fresh servers every pair or every block need none.
    instance_allowance: float = INSTANCE_ALLOWANCE
    instance_tail_allowance: float = INSTANCE_TAIL_ALLOWANCE


def _model(cfg: Config, name: str, flag: str) -> ModelConfig:
    models = {m.name: m for m in cfg.models}
    if name and name not in models:
        raise UsageError(f"--model {name!r}: not in {flag} {cfg.source}; choose one of {', '.join(models)}")
    return models[name] if name else cfg.models[0]


def check_comparable(a: Config, b: Config, *, sequential: bool = False) -> None:
    """UsageError (exit 2) unless both configs load the same dataset with the same workload, and (both
    servers running at once) do not fix the same port."""
    if a.server.port and a.server.port == b.server.port and not sequential:
        raise UsageError(f"--baseline {a.source} and --candidate {b.source} both fix [server] port {a.server.port}: "
                         f"two servers cannot share it; set different ports, leave them unset, or pass --sequential")
    if resolve_dataset_path(a.dataset) != resolve_dataset_path(b.dataset):
        raise UsageError(f"--baseline {a.source} and --candidate {b.source} name different datasets "
                         f"({resolve_dataset_path(a.dataset)} vs {resolve_dataset_path(b.dataset)}); an A/B needs one")
    if a.workload != b.workload:
        diff = [k for k in a.workload.__struct_fields__ if getattr(a.workload, k) != getattr(b.workload, k)]
        raise UsageError(f"--baseline {a.source} and --candidate {b.source} differ in [workload] "
                         f"{', '.join(diff)}; an A/B changes the server only")


# Why aqbench's own blocks and not AIPerf's multi-run: a `--variant` may set `url`, but AIPerf 0.13.0 runs variations
# in their declared order (A B A B: B always later, so linear drift falls on B) and spawns one process tree for the
# whole sweep, where aqbench accounts and correlates one window per AIPerf run.
async def run_ab_session(a: Config, b: Config, opts: AbOptions, interrupt: Interrupt, toolkit: Toolkit,
                         *, compare: CompareConfig) -> Path:
    """Run the session; returns its journal. Raises UsageError before anything starts on bad input."""
    check_comparable(a, b, sequential=opts.sequential)
    models = {"A": _model(a, opts.model, "--baseline"), "B": _model(b, opts.model, "--candidate")}
    install = await anyio.to_thread.run_sync(toolkit.aiperf.check_install)
    tokenizer = await anyio.to_thread.run_sync(toolkit.aiperf.ensure_tokenizer, models["A"].tokenizer)
    dataset = await anyio.to_thread.run_sync(lambda: load_dataset(resolve_dataset_path(a.dataset),
                                                                  facts=facts_dir(a.run)))
    order = block_order(opts.pairs, opts.seed)
    critical = await anyio.to_thread.run_sync(critical_values, opts.pairs, compare.confidence, opts.boundary)
    allowance = (opts.instance_allowance, opts.instance_tail_allowance) if _one_process_a_side(opts) else (0.0, 0.0)
    async with open_run(a, command="ab", interrupt=interrupt) as run:
        await run.bus.publish(PhaseFinished(source="ab", phase="dataset", outcome="passed", detail=DatasetPhase(
            name=dataset.name, identity=dataset.identity, path=str(dataset.root), items=len(dataset.items),
            arms=list(a.workload.arms))))
        await run.tg.start(toolkit.records_tailer(run.bus).run)
        correlator = Correlator(run.bus, key_parser=parse_session_key, match_timeout_s=5.0, answer_grace_s=1.0)
        await run.tg.start(correlator.run)
        specs = {side: ServerSpec.from_config(cfg, models[side], run.run_dir / side,
                                              parts=toolkit.server_parts(cfg.server.kind))
                 for side, cfg in (("A", a), ("B", b))}
        for _retry in range(3):  # two free ports picked before either server binds may coincide
            if b.server.port or specs["B"].port != specs["A"].port:
                break
            specs["B"] = ServerSpec.from_config(b, models["B"], run.run_dir / "B",
                                                parts=toolkit.server_parts(b.server.kind))
        work = run.run_dir / "aiperf"
        rows = interleave_kinds(await anyio.to_thread.run_sync(lambda: prepare_arms(
            dataset, list(a.workload.arms), work / "wire", cache=clip_cache_dir(run.config.run))), dataset)
        input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows, work / "inputs.jsonl")
        power = await anyio.to_thread.run_sync(lambda: plan_power(
            opts.pairs, opts.block_requests, compare.latency_tolerance, compare.confidence,
            opts.boundary if opts.stop_early else None, opts.plan_noise, allowance[0], items=len(rows),
            tail_tolerance=compare.tail_tolerance, tail_allowance=allowance[1]))
        plan = AbPhase(baseline=opts.baseline, candidate=opts.candidate, baseline_url=specs["A"].base_url,
                       candidate_url=specs["B"].base_url, order=order, seed=opts.seed,
                       block_requests=opts.block_requests, block_warmup=opts.block_warmup, sequential=opts.sequential,
                       fresh_pairs=not opts.sequential and not opts.keep_servers, max_duration_s=opts.max_duration_s, confidence=compare.confidence,
                       t_quantile=critical[-1] if critical and opts.stop_early else t_quantile(opts.pairs, compare.confidence),
                       latency_tolerance=compare.latency_tolerance,
                       tail_tolerance=compare.tail_tolerance, boundary=opts.boundary if opts.stop_early else "",
                       critical_t=critical if opts.stop_early else [], strict=opts.strict, power=power,
                       instance_allowance=allowance[0], instance_tail_allowance=allowance[1])
        await run.bus.publish(PhaseStarted(source="ab", phase="ab", model=models["A"].name, detail=plan))
        say(f"ab: {opts.pairs} pairs in order {order}, {opts.block_requests} requests a block "
            f"(+{opts.block_warmup} warmup); servers {servers_text(opts.sequential, opts.keep_servers)}; "
            + (describe(opts.boundary, critical, compare.confidence) if opts.stop_early else "no early stop")
            + f"\nab: {describe_power(power, opts.block_requests)}")
        ran, stop = await _blocks(run, opts, toolkit, specs, models, order, input_file, tokenizer, install, rows,
                                  correlator, compare, {side: AnswerBook(run.bus, models[side], dataset,
                                                                         a.workload.max_tokens, source="ab")
                                                        for side in ("A", "B")})
        await run.bus.publish(PhaseFinished(source="ab", phase="ab", model=models["A"].name, outcome="finished",
                                            reason=stop, detail=AbPhase(blocks_run=ran, stop_reason=stop)))
        run.finish(status="ok", exit_code=0, reason=stop)
        return run.journal_path


def _one_process_a_side(opts: AbOptions) -> bool:
    return opts.keep_servers and not opts.sequential


@contextlib.asynccontextmanager
async def _servers(run: RunScope, specs: dict[str, ServerSpec], up: bool) -> AsyncIterator[dict[str, ServerHandle]]:
    """Both servers up (started one after the other) while the block is open, if `up`; stopped at its end."""
    handles: dict[str, ServerHandle] = {}
    if up:
        for side in ("A", "B"):
            handles[side] = await run.tg.start(supervise, specs[side], run.bus)
    try:
        yield handles
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(60):
            for handle in handles.values():
                await handle.stop()


async def _blocks(run: RunScope, opts: AbOptions, toolkit: Toolkit, specs: dict[str, ServerSpec],
                  models: dict[str, ModelConfig], order: str, input_file: Path, tokenizer: Path, install: AiperfFacts,
                  rows: list[ArmRequest], correlator: Correlator, compare: CompareConfig,
                  books: dict[str, AnswerBook]) -> tuple[int, str]:
    started = anyio.current_time()
    fresh_pairs = not opts.sequential and not opts.keep_servers
    async with _servers(run, specs, _one_process_a_side(opts)) as session:
        for pair in range(len(order) // 2):
            elapsed = anyio.current_time() - started
            if opts.max_duration_s and pair and elapsed + elapsed / pair > opts.max_duration_s:
                return 2 * pair, f"--max-duration {opts.max_duration_s:g} s: another pair would not fit ({pair} run)"
            # Fresh servers every pair (the default): whatever one server process does differently for its life
            # falls on this pair alone, so the pairs stay independent and the t interval covers it.
            async with _servers(run, specs, fresh_pairs) as fresh:
                for k in (2 * pair, 2 * pair + 1):
                    side = order[k]
                    if opts.sequential:
                        async with supervised(specs[side], run.bus) as handle:
                            await _block(run, toolkit, handle, models[side], k, side, input_file, tokenizer, install,
                                         rows, opts, correlator, books[side])
                    else:
                        await _block(run, toolkit, (fresh or session)[side], models[side], k, side, input_file,
                                     tokenizer, install, rows, opts, correlator, books[side])
            if opts.stop_early and 2 * pair + 2 < len(order) and (reason := await _look(run, compare)):
                return 2 * pair + 2, f"{reason} (of at most {len(order) // 2}; {opts.boundary} boundary)"
    return len(order), f"every planned block ran ({len(order) // 2} pairs)"


async def _look(run: RunScope, compare: CompareConfig) -> str | None:
    """A look after a pair: the verdict so far from the journal (as `aqbench report` folds it); why to stop."""
    if not await run.flush_journal():
        return None  # the journal lags: look again after the next pair
    result = await anyio.to_thread.run_sync(decide, run.journal_path, compare)
    reason = stop_reason(result)
    say(f"  look after {len(result.pairs)} pairs: "
        + (reason or ", ".join(f"{n} {c}" for c, n in _counts(result).items())))
    return reason


def _counts(result: AbResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in result.figures:
        out[f.change] = out.get(f.change, 0) + 1
    return out


async def _block(run: RunScope, toolkit: Toolkit, handle: ServerHandle, model: ModelConfig, k: int, side: str,
                 input_file: Path, tokenizer: Path, install: AiperfFacts, rows: list[ArmRequest], opts: AbOptions,
                 correlator: Correlator, book: AnswerBook) -> None:
    """One block: one AIPerf window against one side; raises UsageError-free AqbenchError when it fails."""
    cfg = run.config
    aiperf = toolkit.aiperf
    window = window_name(model.name, k, side)
    folder = run.run_dir / "aiperf" / f"block-{k:02d}-{side}"
    # Each block its own live tap: a shared one would replay earlier blocks' requests into this window.
    collector = WindowCollector(run.bus, window, name=f"ab:{window}")
    cmd = aiperf.build_command(cfg.workload, base_url=handle.base_url, model=model.name, input_file=input_file,
                               artifact_dir=folder / "artifacts", tokenizer=tokenizer, requests=opts.block_requests,
                               warmup=opts.block_warmup, tap_dir=folder / "tap")
    await run.bus.publish(PhaseStarted(source="ab", phase="aiperf", model=model.name,
                                       detail=AiperfRunPhase(arms=list(cfg.workload.arms), rows=len(rows),
                                                             window=window)))
    async with anyio.create_task_group() as tg:
        await tg.start(collector.run)
        outcome = await aiperf.run_aiperf(cmd, run.bus, window=window, deadline_s=cfg.workload.deadline_s,
                                          stop_grace_s=cfg.workload.stop_grace_s, install=install)
        acc = await correlator.close_window(window, expected=outcome.issued, expected_from=outcome.issued_from)
        await collector.wait_accounted(_COLLECT_TIMEOUT_S)
        tg.cancel_scope.cancel()
    # Every answer checked against the dataset as qualify checks it (its AnswerBook journals VerdictReached).
    judged = await judge_answers(book, rows, collector.events)
    ok = acc.balanced and outcome.classification == "complete"
    await run.bus.publish(PhaseFinished(source="ab", phase="aiperf", model=model.name,
                                        outcome="passed" if ok else "failed",
                                        reason=outcome.reason if acc.balanced else "; ".join(acc.problems),
                                        detail=AiperfRunPhase(classification=outcome.classification,
                                                              balanced=acc.balanced)))
    say(f"  block {k:02d} {side}: {outcome.classification}, {sum(acc.issued.values())} requests"
        f"{'' if acc.balanced else ' (NOT BALANCED)'}, {judged}")
    log.info("ab_block", block=k, side=side, classification=outcome.classification, balanced=acc.balanced)
