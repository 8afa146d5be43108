"""Read `qualify` run journals into per-checkpoint ProbeOutcomes for the inventory (`--probe RUN_DIR`).

A fold over `events.jsonl` only (RunStarted, CapabilityProbed, ModelResult); never reads reports or logs.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.base.errors import InventoryError
from orchestrator.config import ModelConfig
from orchestrator.events import CapabilityProbed, Event, ModelResult, ResultRow, RunStarted, TransportEvidence
from orchestrator.inventory.records import Evidence, ProbeOutcome
from orchestrator.spine.journal import iter_journal, journal_path

__all__ = ["read_probes"]


def _journal_path(run: str | Path) -> Path:
    p = Path(run)
    if p.is_dir():
        p = journal_path(p)
    if not p.is_file():
        raise InventoryError(f"{p}: no journal; --probe takes a qualify run folder holding events.jsonl")
    return p


def _identity(configured: dict[str, ModelConfig], name: str, row: ResultRow) -> dict[str, str]:
    """checkpoint/profile/revision of a model: the ModelResult row first, then the run's config snapshot."""
    cfg = configured.get(name)
    return {
        key: str(getattr(row, key) or (getattr(cfg, key) if cfg is not None else "") or "")
        for key in ("checkpoint", "profile", "revision")
    }


def _where(event: Event) -> str:
    """A journal line by its sequence number and event tag (`seq 7 (model_result)`)."""
    return f"seq {event.seq} ({type(event).__struct_config__.tag})"


def read_probes(run: str | Path) -> list[ProbeOutcome]:
    """One ProbeOutcome per model the run judged: its ModelResult, else a failed transport check.

    Blocks (reads the journal). Raises InventoryError (or JournalError) when the journal is missing or
    corrupt before its last line; a torn last line is skipped, as everywhere else.
    """
    journal = _journal_path(run)
    run_dir = str(journal.parent)
    run_id, started_ns = journal.parent.name, 0
    configured: dict[str, ModelConfig] = {}
    transport: dict[str, CapabilityProbed] = {}
    results: dict[str, ModelResult] = {}
    for event in iter_journal(journal):
        if isinstance(event, RunStarted):
            run_id, started_ns = event.run_id or run_id, event.ts_ns
            for model in event.config.models if event.config is not None else []:
                configured[model.name] = model
        elif isinstance(event, CapabilityProbed) and event.check == "transport":
            transport[event.model] = event
        elif isinstance(event, ModelResult):
            results[event.model] = event
    outcomes: list[ProbeOutcome] = []
    for name in sorted(set(results) | {m for m, ev in transport.items() if not ev.passed}):
        result = results.get(name)
        probe = transport.get(name)
        ident = _identity(configured, name, result.row if result else ResultRow())
        evidence: list[Evidence] = []
        reason = ""
        if probe is not None:
            evidence.append(Evidence(claim=f"probe:transport:{'passed' if probe.passed else 'failed'}",
                                     file=str(journal), field=_where(probe), value=probe.evidence))
            sent = probe.evidence.with_audio if isinstance(probe.evidence, TransportEvidence) else None
            reason = probe.reason or (f"input_audio answered {sent.status}"
                                      if not probe.passed and sent is not None and sent.status else "")
        if result is not None:
            status, stage = result.status, result.failed_stage
            evidence.append(Evidence(claim=f"probe:result:{status}", file=str(journal),
                                     field=_where(result), value=status))
            reason = result.row.reason or reason
        else:
            # An interrupted run: the transport check alone already proves the route is missing.
            status, stage = "unsupported", ""
        if not reason and status == "failed":
            reason = f"failed at {stage}"
        outcomes.append(ProbeOutcome(
            run_dir=run_dir, run_id=run_id, started_ns=started_ns, model=name, checkpoint=ident["checkpoint"],
            profile=ident["profile"], revision=ident["revision"], status=status, failed_stage=stage,
            reason=reason, evidence=evidence,
        ))
    return outcomes
