"""`aqbench run-aiperf --config bench.toml`: one AIPerf phase against the configured server.

Composition root: starts the server through the supervisor, the server-records tailer and the
correlator, runs AIPerf over the dataset's arms, prints a live line and a final summary with the
accounting. Everything it learns is an event in the run's journal.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio

from orchestrator.view.line import LiveLine

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run-aiperf", help="run one AIPerf phase against the configured server, with accounting",
                       description="Start the configured server, run one AIPerf phase over the dataset's arms with "
                       "live correlation and accounting, and write runs/<id>/report.{json,md,html}. Exit 0 when "
                       "AIPerf answered every request and the accounting balances, 1 when AIPerf's run was "
                       "partial, cancelled or failed, 2 on configuration or usage errors, 3 when the run itself "
                       "failed (an accounting breach included), 130/143 when interrupted by SIGINT/SIGTERM.")
    p.add_argument("--config", default="bench.toml", help="configuration file (default: bench.toml)")
    p.add_argument("--model", default="", help="[[models]] name to serve (default: the first)")
    p.add_argument("--requests", type=int, default=None, help="override workload.requests")
    p.add_argument("--warmup-requests", type=int, default=None, help="override workload.warmup_requests")
    p.add_argument("--concurrency", type=int, default=None, help="override workload.concurrency")
    p.add_argument("--request-rate", type=float, default=None, help="override workload.request_rate")
    p.add_argument("--arms", default="", help="comma-separated arms (default: workload.arms)")
    p.add_argument("--match-timeout-s", type=float, default=5.0,
                   help="how long a request's half waits for the other half (default 5)")
    p.set_defaults(func=run)


def _summary(outcome: Any, acc: Any, live: LiveLine) -> str:
    lines = [f"AIPerf {outcome.window}: {outcome.classification} ({outcome.reason}); exit code {outcome.returncode}"]
    for phase in sorted(acc.issued):
        causes = ", ".join(f"{k} {v}" for k, v in sorted(acc.by_cause.get(phase, {}).items()))
        lines.append(f"  {phase}: issued {acc.issued[phase]} ({causes})")
    lines.append(live.line().strip())
    verdict = "balanced" if acc.balanced else "NOT BALANCED: " + "; ".join(acc.problems)
    lines.append(f"  accounting: {verdict}")
    lines.append(f"  artifacts: {outcome.artifact_dir}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from orchestrator.config import load_config
    from orchestrator.run import run_main

    cfg = load_config(args.config)
    return run_main(lambda interrupt: _body(cfg, args, interrupt))


async def _body(cfg: Any, args: argparse.Namespace, interrupt: Any) -> int:
    from adapters.aiperf import check_install, ensure_tokenizer
    from orchestrator.dataset import load_dataset, resolve_dataset_path
    from orchestrator.errors import UsageError
    from orchestrator.run import open_run

    models = {m.name: m for m in cfg.models}
    if args.model and args.model not in models:
        raise UsageError(f"--model {args.model!r}: not in {cfg.source}; choose one of {', '.join(models)}")
    model = models[args.model] if args.model else cfg.models[0]
    arms = [a for a in args.arms.split(",") if a] or list(cfg.workload.arms)
    install = await anyio.to_thread.run_sync(check_install)
    tokenizer = await anyio.to_thread.run_sync(ensure_tokenizer, model.tokenizer)
    dataset = await anyio.to_thread.run_sync(load_dataset, resolve_dataset_path(cfg.dataset))

    opened: list[Any] = []  # the run scope, once open_run made it
    try:
        async with open_run(cfg, command="run-aiperf", interrupt=interrupt) as run:
            opened.append(run)
            return await _phase(run, cfg, args, model, arms, install, tokenizer, dataset)
    finally:
        # Every run writes its reports, an interrupted or failed one too (they say so).
        if opened:
            with anyio.CancelScope(shield=True), anyio.move_on_after(120):
                await _write_reports(opened[0])


async def _write_reports(run: Any) -> None:
    from orchestrator.logs import get_logger
    from orchestrator.reports import write_reports

    try:
        paths = await anyio.to_thread.run_sync(write_reports, run.journal_path, run.run_dir)
    except Exception as exc:  # the run's own outcome stands; a report failure is said, not raised over it
        get_logger("aqbench.run-aiperf").error("report_failed", error=repr(exc))
        return
    print(f"  reports: {', '.join(str(p) for p in paths)}", file=sys.stderr, flush=True)


async def _phase(run: Any, cfg: Any, args: argparse.Namespace, model: Any, arms: list[str], install: Any,
                 tokenizer: Any, dataset: Any) -> int:
    """The run's body: the model's server, one AIPerf window, its accounting and the model's result."""
    from adapters.aiperf import build_command, run_aiperf
    from adapters.server import server_parts
    from adapters.trtmc.records_tail import ServerRecordsTailer
    from orchestrator.correlate import Correlator
    from orchestrator.dataset import interleave_kinds, parse_session_key, prepare_arms, write_aiperf_input
    from orchestrator.events import ModelResult, PhaseDetail, PhaseFinished, PhaseStarted, ResultRow
    from orchestrator.supervisor import ServerSpec, supervise

    window = f"{model.name}/aiperf-1"
    # The dataset's identity, as qualify journals it, so compare and the ledger can tell datasets apart.
    await run.bus.publish(PhaseFinished(source="run-aiperf", phase="dataset", outcome="passed",
                                        detail=PhaseDetail(name=dataset.name, identity=dataset.identity,
                                                           path=str(dataset.root), items=len(dataset.items),
                                                           arms=arms)))
    facts = {"checkpoint": model.checkpoint, "profile": model.profile, "revision": model.revision,
             "family": model.family, "native_task": model.native_task, "precision": model.precision}
    # The model phase frames everything this run journals (server lifecycle, samples) as this model's.
    await run.bus.publish(PhaseStarted(source="run-aiperf", phase="model", model=model.name,
                                       detail=PhaseDetail(**facts, bundle=model.bundle or cfg.server.bundle)))
    live = LiveLine(run.bus)
    await run.tg.start(live.run)
    tailer = ServerRecordsTailer(run.bus)
    await run.tg.start(tailer.run)
    # The live tap carries the answer text; an export half that wins the race waits briefly for it.
    correlator = Correlator(run.bus, key_parser=parse_session_key, match_timeout_s=args.match_timeout_s,
                            answer_grace_s=1.0)
    await run.tg.start(correlator.run)
    spec = ServerSpec.from_config(cfg, model, run.run_dir, parts=server_parts(cfg.server.kind))
    handle = await run.tg.start(supervise, spec, run.bus)
    work = run.run_dir / "aiperf"
    rows = interleave_kinds(await anyio.to_thread.run_sync(prepare_arms, dataset, arms, work / "wire"), dataset)
    input_file = await anyio.to_thread.run_sync(write_aiperf_input, rows, work / "inputs.jsonl")
    cmd = build_command(cfg.workload, base_url=handle.base_url, model=model.name, input_file=input_file,
                        artifact_dir=work / "artifacts", tokenizer=tokenizer, requests=args.requests,
                        warmup=args.warmup_requests, concurrency=args.concurrency,
                        request_rate=args.request_rate)
    await anyio.to_thread.run_sync(cmd.save, work)
    await run.bus.publish(PhaseStarted(source="run-aiperf", phase="aiperf", model=model.name,
                                       detail=PhaseDetail(arms=arms, rows=len(rows), window=window)))
    try:
        outcome = await run_aiperf(cmd, run.bus, window=window, deadline_s=cfg.workload.deadline_s,
                                   stop_grace_s=cfg.workload.stop_grace_s, install=install)
    except anyio.get_cancelled_exc_class():
        # Interrupted: still journal what the window accounted so far (its open requests as in flight).
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for ev in correlator.joiner.close_window(window):
                await run.bus.publish(ev)
        raise
    acc = await correlator.close_window(window, expected=outcome.issued, expected_from=outcome.issued_from)
    await handle.stop()
    ok = acc.balanced and outcome.classification == "complete"
    reason = outcome.reason if acc.balanced else "accounting: " + "; ".join(acc.problems)
    await run.bus.publish(PhaseFinished(source="run-aiperf", phase="aiperf", model=model.name,
                                        outcome="passed" if ok else "failed", reason=reason,
                                        detail=PhaseDetail(classification=outcome.classification,
                                                           balanced=acc.balanced)))
    # The row's status is what AIPerf's run came to (aiperf-complete, -partial, -cancelled, -failed).
    status = f"aiperf-{outcome.classification}" if acc.balanced else "accounting-breach"
    await run.bus.publish(ModelResult(source="run-aiperf", model=model.name, status=status,
                                      failed_stage="" if ok else "aiperf",
                                      row=ResultRow(**facts, aiperf_command=cmd.shell, reason=reason)))
    await run.bus.publish(PhaseFinished(source="run-aiperf", phase="model", model=model.name, outcome=status,
                                        reason=reason))
    print(_summary(outcome, acc, live), file=sys.stderr, flush=True)
    if not acc.balanced:
        run.finish(status="error", exit_code=3, reason="accounting breach: " + "; ".join(acc.problems))
        return 3
    run.finish(status="ok" if ok else "failed", exit_code=0 if ok else 1, reason=outcome.reason,
               counts={f"{p}_issued": n for p, n in acc.issued.items()})
    return 0 if ok else 1
