"""run-aiperf's use: the model's server, one AIPerf window over the dataset's arms, its accounting and the
model's result row, all journaled; a live line and a final summary on stderr."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec

from orchestrator.aiperf_phase.serving import run_window, serve_correlated
from orchestrator.base.errors import ServerError, UsageError
from orchestrator.config import Config, ModelConfig
from orchestrator.dataset import (
    Dataset,
    load_dataset,
    resolve_dataset_path,
)
from orchestrator.dataset.clip_cache import facts_dir
from orchestrator.events import (
    AccountingChecked,
    AiperfRunPhase,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    ResultRow,
)
from orchestrator.reports import write_reports
from orchestrator.run import Interrupt, RunScope, open_run
from orchestrator.run.provenance import sha256_path
from orchestrator.spine.logs import get_logger, say
from orchestrator.spine.ports import AiperfFacts, AiperfResult, Toolkit
from orchestrator.view.line import LiveLine
from orchestrator.view.output import ViewOutput

__all__ = ["RunAiperfOptions", "run_aiperf_phase"]

log = get_logger("aqbench.run-aiperf")


class RunAiperfOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml (None: bench.toml's [workload] value)."""

    model: str = ""
    requests: int | None = None
    warmup_requests: int | None = None
    concurrency: int | None = None
    request_rate: float | None = None
    arms: list[str] = []
    # How long a request's half waits for the other half.
    match_timeout_s: float = 5.0


# The adapters come in through a Toolkit from the composition root (orchestrator/commands/run_aiperf.py).
# Reports are folded from the journal at the end, an interrupted or failed run's too.
async def run_aiperf_phase(cfg: Config, opts: RunAiperfOptions, interrupt: Interrupt, toolkit: Toolkit, *,
                           live_output: ViewOutput | None = None) -> int:
    """Run the phase; returns the exit code (0 complete and balanced, 1 AIPerf's run partial, cancelled or
    failed, 3 an accounting breach). Every run writes its reports, an interrupted or failed one too.
    `live_output` draws the live line (None: plain lines on stderr)."""
    models = {m.name: m for m in cfg.models}
    if opts.model and opts.model not in models:
        raise UsageError(f"--model {opts.model!r}: not in {cfg.source}; choose one of {', '.join(models)}")
    model = models[opts.model] if opts.model else cfg.models[0]
    arms = list(opts.arms) or list(cfg.workload.arms)
    install = await anyio.to_thread.run_sync(toolkit.aiperf.check_install)
    tokenizer = await anyio.to_thread.run_sync(toolkit.aiperf.ensure_tokenizer, model.tokenizer)
    dataset = await anyio.to_thread.run_sync(lambda: load_dataset(resolve_dataset_path(cfg.dataset),
                                                                  facts=facts_dir(cfg.run)))

    opened: list[RunScope] = []  # the run scope, once open_run made it
    try:
        async with open_run(cfg, command="run-aiperf", interrupt=interrupt) as run:
            opened.append(run)
            return await _phase(run, opts, toolkit, model, arms, install, tokenizer, dataset, live_output)
    finally:
        if opened:
            with anyio.CancelScope(shield=True), anyio.move_on_after(120):
                await _write_reports(opened[0])


async def _write_reports(run: RunScope) -> None:
    try:
        paths = await anyio.to_thread.run_sync(write_reports, run.journal_path, run.run_dir)
    except Exception as exc:  # the run's own outcome stands; a report failure is said, not raised over it
        log.error("report_failed", error=repr(exc))
        return
    say(f"  reports: {', '.join(str(p) for p in paths)}")


async def _phase(run: RunScope, opts: RunAiperfOptions, toolkit: Toolkit, model: ModelConfig, arms: list[str],
                 install: AiperfFacts, tokenizer: Path, dataset: Dataset, live_output: ViewOutput | None) -> int:
    """The run's body: the model's server, one AIPerf window, its accounting and the model's result."""
    cfg = run.config
    window = f"{model.name}/aiperf-1"
    bundle_sha256 = await _bundle_digest(model.bundle or cfg.server.bundle)
    live = LiveLine(run.bus, out=live_output)
    await run.tg.start(live.run)
    served = await serve_correlated(run, toolkit, model, dataset, arms, source="run-aiperf",
                                    match_timeout_s=opts.match_timeout_s)
    handle, rows, work = served.handle, served.rows, run.run_dir / "aiperf"
    facts = model.identity_fields()
    cmd = toolkit.aiperf.build_command(cfg.workload, base_url=handle.base_url, model=model.name,
                                       input_file=served.input_file, artifact_dir=work / "artifacts",
                                       tokenizer=tokenizer, requests=opts.requests, warmup=opts.warmup_requests,
                                       concurrency=opts.concurrency, request_rate=opts.request_rate)
    await anyio.to_thread.run_sync(cmd.save, work)
    await run.bus.publish(PhaseStarted(source="run-aiperf", phase="aiperf", model=model.name,
                                       detail=AiperfRunPhase(arms=arms, rows=len(rows), window=window)))
    outcome, acc = await run_window(run, toolkit, served.correlator, cmd, window=window,
                                    deadline_s=cfg.workload.deadline_s, install=install)
    await handle.stop()
    ok = acc.balanced and outcome.classification == "complete"
    reason = outcome.reason if acc.balanced else "accounting: " + "; ".join(acc.problems)
    await run.bus.publish(PhaseFinished(source="run-aiperf", phase="aiperf", model=model.name,
                                        outcome="passed" if ok else "failed", reason=reason,
                                        detail=AiperfRunPhase(classification=outcome.classification,
                                                              balanced=acc.balanced)))
    # The row's status is what AIPerf's run came to (aiperf-complete, -partial, -cancelled, -failed).
    status = f"aiperf-{outcome.classification}" if acc.balanced else "accounting-breach"
    await run.bus.publish(ModelResult(source="run-aiperf", model=model.name, status=status,
                                      failed_stage="" if ok else "aiperf",
                                      row=ResultRow(**facts, bundle_sha256=bundle_sha256, aiperf_command=cmd.shell,
                                                    reason=reason, noninferiority=None, keyed_by=None)))
    await run.bus.publish(PhaseFinished(source="run-aiperf", phase="model", model=model.name, outcome=status,
                                        reason=reason))
    say(_summary(window, outcome, acc, live))
    if not acc.balanced:
        run.finish(status="error", exit_code=3, reason="accounting breach: " + "; ".join(acc.problems))
        return 3
    run.finish(status="ok" if ok else "failed", exit_code=0 if ok else 1, reason=outcome.reason,
               counts={f"{p}_issued": n for p, n in acc.issued.items()})
    return 0 if ok else 1


async def _bundle_digest(bundle: str) -> str:
    """The bundle's sha256, as qualify journals it, so a run-aiperf row names exactly what it measured; empty
    without a bundle, or where it is missing (the server's start then says so)."""
    if not bundle:
        return ""
    try:
        return await anyio.to_thread.run_sync(sha256_path, Path(bundle))
    except ServerError:
        return ""


def _summary(window: str, outcome: AiperfResult, acc: AccountingChecked, live: LiveLine) -> str:
    lines = [f"AIPerf {window}: {outcome.classification} ({outcome.reason}); exit code {outcome.returncode}"]
    for phase in sorted(acc.issued):
        causes = ", ".join(f"{k} {v}" for k, v in sorted(acc.by_cause.get(phase, {}).items()))
        lines.append(f"  {phase}: issued {acc.issued[phase]} ({causes})")
    lines.append(live.line().strip())
    verdict = "balanced" if acc.balanced else "NOT BALANCED: " + "; ".join(acc.problems)
    lines.append(f"  accounting: {verdict}")
    lines.append(f"  artifacts: {outcome.artifact_dir}")
    return "\n".join(lines)
