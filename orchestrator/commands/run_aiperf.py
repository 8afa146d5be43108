"""`aqbench run-aiperf --config bench.toml`: one AIPerf phase against the configured server.

Composition root: starts the server through the supervisor, the server-records tailer and the
correlator, runs AIPerf over the dataset's arms, prints a live line and a final summary with the
accounting. Everything it learns is an event in the run's journal.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

import anyio
from anyio.abc import TaskStatus

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run-aiperf", help="run one AIPerf phase against the configured server, with accounting")
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


class LiveLine:
    """A lossy subscriber printing done / errors / p50 latencies about once a second (estimates)."""

    def __init__(self, bus: Any, *, stream: TextIO | None = None, every_s: float = 1.0) -> None:
        from orchestrator.judge.stats import StreamingQuantiles

        self.bus, self.stream, self.every_s = bus, stream or sys.stderr, every_s
        self.done = self.errors = self.warmup = 0
        self.latency = StreamingQuantiles()
        self.model_call = StreamingQuantiles()
        self._last = 0.0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        from orchestrator.events import RequestCorrelated

        async with self.bus.subscribe("live-line", size=4096, lossy=True) as sub:
            task_status.started()
            async for ev in sub:
                if not isinstance(ev, RequestCorrelated):
                    continue
                if ev.phase == "warmup":
                    self.warmup += 1  # warmup is tagged and kept, never in the statistics
                    continue
                self.done += 1
                if not ev.ok:
                    self.errors += 1
                elif ev.request_latency_ms is not None:
                    self.latency.add(ev.request_latency_ms)
                    if ev.model_call_ms is not None:
                        self.model_call.add(ev.model_call_ms)
                if time.monotonic() - self._last >= self.every_s:
                    self.print()

    def line(self) -> str:
        def ms(q: Any) -> str:
            value = q.quantile(50)
            return f"{value:.1f} ms" if value is not None else "-"

        return (f"  live: done {self.done} (+{self.warmup} warmup)  errors {self.errors}  "
                f"p50 client {ms(self.latency)}  p50 model_call {ms(self.model_call)}")

    def print(self) -> None:
        self._last = time.monotonic()
        print(self.line(), file=self.stream, flush=True)


def _expected(aggregate: dict[str, Any]) -> dict[str, int] | None:
    phases = aggregate.get("phases")
    if not isinstance(phases, dict):
        return None
    out = {name: int(p["total"]) for name, p in phases.items() if isinstance(p, dict) and p.get("total") is not None}
    return out or None


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
    from adapters.aiperf import build_command, check_install, ensure_tokenizer, run_aiperf
    from adapters.server import server_parts
    from adapters.trtmc.records_tail import ServerRecordsTailer
    from orchestrator.correlate import Correlator
    from orchestrator.dataset import (
        load_dataset,
        parse_session_key,
        prepare_arms,
        resolve_dataset_path,
        write_aiperf_input,
    )
    from orchestrator.errors import UsageError
    from orchestrator.events import PhaseDetail, PhaseFinished, PhaseStarted
    from orchestrator.run import open_run
    from orchestrator.supervisor import ServerSpec, supervise

    models = {m.name: m for m in cfg.models}
    if args.model and args.model not in models:
        raise UsageError(f"--model {args.model!r}: not in {cfg.source}; choose one of {', '.join(models)}")
    model = models[args.model] if args.model else cfg.models[0]
    arms = [a for a in args.arms.split(",") if a] or list(cfg.workload.arms)
    install = await anyio.to_thread.run_sync(check_install)
    tokenizer = await anyio.to_thread.run_sync(ensure_tokenizer, model.tokenizer)
    dataset_path = resolve_dataset_path(cfg.dataset)

    async with open_run(cfg, command="run-aiperf", interrupt=interrupt) as run:
        window = f"{model.name}/aiperf-1"
        live = LiveLine(run.bus)
        await run.tg.start(live.run)
        tailer = ServerRecordsTailer(run.bus)
        await run.tg.start(tailer.run)
        # The live tap carries the answer text; an export half that wins the race waits briefly for it.
        correlator = Correlator(run.bus, key_parser=parse_session_key, match_timeout_s=args.match_timeout_s,
                                answer_grace_s=1.0)
        await run.tg.start(correlator.run)
        spec = ServerSpec.from_config(cfg, model, run.run_dir, parts=server_parts(cfg.server.kind))
        work = run.run_dir / "aiperf"
        prepared: dict[str, Any] = {}

        async def prepare() -> None:
            dataset = await anyio.to_thread.run_sync(load_dataset, dataset_path)
            prepared["rows"] = await anyio.to_thread.run_sync(prepare_arms, dataset, arms, work / "wire")
            prepared["input"] = await anyio.to_thread.run_sync(write_aiperf_input, prepared["rows"],
                                                               work / "inputs.jsonl")

        # The AIPerf input is written while the server loads its model: neither waits for the other.
        async with anyio.create_task_group() as startup:
            startup.start_soon(prepare)
            handle = await run.tg.start(supervise, spec, run.bus)
        rows, input_file = prepared["rows"], prepared["input"]
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
        acc = await correlator.close_window(window, expected=_expected(outcome.aggregate))
        await handle.stop()
        ok = acc.balanced and outcome.classification == "complete"
        reason = outcome.reason if acc.balanced else "accounting: " + "; ".join(acc.problems)
        await run.bus.publish(PhaseFinished(source="run-aiperf", phase="aiperf", model=model.name,
                                            outcome="passed" if ok else "failed", reason=reason,
                                            detail=PhaseDetail(classification=outcome.classification,
                                                               balanced=acc.balanced)))
        print(_summary(outcome, acc, live), file=sys.stderr, flush=True)
        if not acc.balanced:
            run.finish(status="error", exit_code=3, reason="accounting breach: " + "; ".join(acc.problems))
            return 3
        run.finish(status="ok" if ok else "failed", exit_code=0 if ok else 1, reason=outcome.reason,
                   counts={f"{p}_issued": n for p, n in acc.issued.items()})
        return 0 if ok else 1
