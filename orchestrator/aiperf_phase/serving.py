"""Correlated serving, the steps run-aiperf and sweep share: journal the dataset and the model, start the
records tailer, the correlator and the supervised server, write AIPerf's input; then run AIPerf windows
against it, each accounted by request identity as it closes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import anyio
import msgspec

from orchestrator.config import ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import (
    ArmRequest,
    Dataset,
    interleave_kinds,
    load_dataset,
    parse_session_key,
    prepare_arms,
    write_aiperf_input,
)
from orchestrator.dataset.clip_cache import clip_cache_dir, facts_dir
from orchestrator.events import AccountingChecked, DatasetPhase, ModelPhase, PhaseFinished, PhaseStarted
from orchestrator.run import RunScope
from orchestrator.spine.ports import AiperfFacts, AiperfInvocation, AiperfResult, PhaseGates, Toolkit
from orchestrator.supervision.server_spec import ServerSpec
from orchestrator.supervision.supervisor import ServerHandle, supervise

__all__ = ["Served", "serve_correlated", "run_window", "run_phased"]


class Served(msgspec.Struct, kw_only=True, frozen=True):
    """The server and what its AIPerf runs share: the correlator, the input rows and the input file."""

    handle: ServerHandle
    correlator: Correlator
    rows: list[ArmRequest]
    input_file: Path
    dataset: Dataset


async def serve_correlated(run: RunScope, toolkit: Toolkit, model: ModelConfig, dataset: Dataset | Path,
                           arms: list[str], *, source: str, match_timeout_s: float,
                           key_parser: Callable[[str], tuple[str, str]] = parse_session_key) -> Served:
    """Journal the dataset and the model phase, start the records tailer, the correlator and the model's server
    (all in the run's task group), and write AIPerf's input under runs/<id>/aiperf/. `key_parser` reads an
    input row's session id back into (item id, arm). A `dataset` given as its folder is loaded (verified: every
    clip decoded, 0.8 s for audioqa-v2 on 2 cores) while the server starts, and its phase journaled once loaded,
    inside the model's phase; a loaded one is journaled first."""
    cfg = run.config

    async def journal(loaded: Dataset) -> None:
        # The dataset's identity, as qualify journals it, so compare and the ledger can tell datasets apart.
        await run.bus.publish(PhaseFinished(source=source, phase="dataset", outcome="passed",
                                            detail=DatasetPhase(name=loaded.name, identity=loaded.identity,
                                                                path=str(loaded.root), items=len(loaded.items),
                                                                arms=arms)))

    if isinstance(dataset, Dataset):
        await journal(dataset)
    # The model phase frames everything this run journals (server lifecycle, samples) as this model's.
    await run.bus.publish(PhaseStarted(source=source, phase="model", model=model.name,
                                       detail=ModelPhase(**model.identity_fields(),
                                                         bundle=model.bundle or cfg.server.bundle)))
    await run.tg.start(toolkit.records_tailer(run.bus).run)
    # The live tap carries the answer text; an export half that wins the race waits briefly for it.
    correlator = Correlator(run.bus, key_parser=key_parser, match_timeout_s=match_timeout_s,
                            answer_grace_s=1.0)
    await run.tg.start(correlator.run)
    spec = ServerSpec.from_config(cfg, model, run.run_dir, parts=toolkit.server_parts(cfg.server.kind))
    work = run.run_dir / "aiperf"
    prepared: list[tuple[Dataset, list[ArmRequest], Path]] = []

    async def prepare() -> None:
        loaded = dataset
        if not isinstance(loaded, Dataset):
            path = loaded
            loaded = await anyio.to_thread.run_sync(lambda: load_dataset(path, facts=facts_dir(cfg.run)))
            await journal(loaded)
        # Dealt round-robin by kind: AIPerf sends rows in order, so a short run still asks every kind.
        rows = interleave_kinds(await anyio.to_thread.run_sync(lambda: prepare_arms(
            loaded, arms, work / "wire", cache=clip_cache_dir(cfg.run))), loaded)
        prepared.append((loaded, rows, await anyio.to_thread.run_sync(write_aiperf_input, rows,
                                                                      work / "inputs.jsonl")))

    # The dataset's loading and the input files happen while the server starts (files only, no load): time of
    # the sweep's wall time that was spent before the server's spawn or after it was ready (bench/sweep_wall.py).
    async with anyio.create_task_group() as tg:
        tg.start_soon(prepare)
        handle = await run.tg.start(supervise, spec, run.bus)
    [(loaded, rows, input_file)] = prepared
    return Served(handle=handle, correlator=correlator, rows=rows, input_file=input_file, dataset=loaded)


async def run_window(run: RunScope, toolkit: Toolkit, correlator: Correlator, cmd: AiperfInvocation, *, window: str,
                     deadline_s: float, install: AiperfFacts | None = None,
                     stop: anyio.Event | None = None) -> tuple[AiperfResult, AccountingChecked]:
    """One AIPerf run as `window`, then its accounting (issued against AIPerf's own count). Interrupted, it
    still journals what the window accounted so far (its open requests as in flight)."""
    cfg = run.config
    try:
        outcome = await toolkit.aiperf.run_aiperf(cmd, run.bus, window=window, deadline_s=deadline_s,
                                                  stop_grace_s=cfg.workload.stop_grace_s, install=install, stop=stop)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for ev in correlator.joiner.close_window(window):
                await run.bus.publish(ev)
        raise
    acc = await correlator.close_window(window, expected=outcome.issued, expected_from=outcome.issued_from)
    return outcome, acc


async def run_phased(run: RunScope, toolkit: Toolkit, correlator: Correlator, cmd: AiperfInvocation, *,
                     phases: Mapping[str, str], deadline_s: float, install: AiperfFacts | None = None,
                     gates: PhaseGates | None = None) -> tuple[AiperfResult, dict[str, AccountingChecked]]:
    """One AIPerf process running several windows as its phases (`phases`: each load's name -> its window, from
    AiperfTools.phased_command), then each window's accounting against what AIPerf issued in its phases. A
    window whose phases never started (AIPerf ended before them) is not accounted and is absent from the
    result, as is a gated load that was skipped (`gates`). Interrupted, it still journals what each window
    accounted so far."""
    cfg = run.config
    windows = list(dict.fromkeys(phases.values()))
    try:
        outcome = await toolkit.aiperf.run_aiperf(cmd, run.bus, window=windows[0], deadline_s=deadline_s,
                                                  stop_grace_s=cfg.workload.stop_grace_s, install=install,
                                                  phases=phases, gates=gates)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for window in windows:
                for ev in correlator.joiner.close_window(window):
                    await run.bus.publish(ev)
        raise
    accounts: dict[str, AccountingChecked] = {}
    for window, one in outcome.windows.items():
        accounts[window] = await correlator.close_window(window, expected=one.issued, expected_from=one.issued_from)
    return outcome, accounts
