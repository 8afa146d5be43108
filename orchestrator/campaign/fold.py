"""Folds `campaign.jsonl` into the campaign report's typed summary: rows, attempts, node use, accounting.

A pure fold over the campaign journal; reads nothing else.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.base.errors import JournalError
from orchestrator.campaign.events import (
    AttemptEnded,
    AttemptPlaced,
    CampaignFinished,
    CampaignStarted,
    KeptFile,
    ModelFinished,
    ModelSubmitted,
    NodeLost,
)
from orchestrator.campaign.journal import read_campaign
from orchestrator.events import GpuIdentity

__all__ = ["CAMPAIGN_REPORT_VERSION", "CampaignReport", "CampaignRow", "AttemptRow", "NodeUse", "Accounting",
           "fold_campaign"]

CAMPAIGN_REPORT_VERSION = 1


class AttemptRow(msgspec.Struct, frozen=True, kw_only=True):
    attempt: int
    node_id: str = ""
    node: str = ""
    started_unix_ns: int = 0
    ended_unix_ns: int = 0
    ended: str = "running"
    reason: str = ""
    status: str = ""
    servers_not_stopped: list[str] = []
    gpus: list[GpuIdentity] = []  # the GPUs the attempt was given, as NVML named them


class CampaignRow(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    status: str
    failed_stage: str = ""
    reason: str = ""
    reproduce: str = ""
    journal: str = ""
    run_folder: str = ""
    kept_on_node: list[KeptFile] = []
    attempts: list[AttemptRow] = []


class NodeUse(msgspec.Struct, frozen=True, kw_only=True):
    node_id: str
    node: str
    attempts: int
    busy_s: float
    share_of_wall: float
    lost: bool = False


class Accounting(msgspec.Struct, frozen=True, kw_only=True):
    """Every submitted model ends with exactly one status; `unaccounted` lists any that did not."""

    models: int
    finished: int
    by_status: dict[str, int]
    unaccounted: list[str]
    balanced: bool


class CampaignReport(msgspec.Struct, frozen=True, kw_only=True):
    report_version: int = CAMPAIGN_REPORT_VERSION
    campaign_id: str
    status: str
    exit_code: int | None
    reason: str = ""
    sessions: int
    started_unix_ns: int
    finished_unix_ns: int
    wall_s: float
    address: str = ""
    rows: list[CampaignRow]
    nodes: list[NodeUse]
    nodes_lost: list[str]
    accounting: Accounting


def fold_campaign(path: str | Path) -> CampaignReport:
    """The report of the campaign journal at `path`. Blocks (file read)."""
    events = read_campaign(path)
    starts = [e for e in events if isinstance(e, CampaignStarted)]
    if not starts:
        raise JournalError(f"{path}: no campaign_started line; not a campaign journal")
    node_names: dict[str, str] = {}
    for s in starts:
        for n in s.nodes:
            node_names[n.node_id] = n.address or n.node_id[:12]
    attempts: dict[tuple[str, int], AttemptRow] = {}
    finished: dict[str, ModelFinished] = {}
    submitted: set[str] = set()
    lost: list[str] = []
    end: CampaignFinished | None = None
    for ev in events:
        if isinstance(ev, ModelSubmitted):
            submitted.add(ev.model)
            attempts[(ev.model, ev.attempt)] = AttemptRow(attempt=ev.attempt)
        elif isinstance(ev, AttemptPlaced):
            node_names.setdefault(ev.node_id, ev.node_address or ev.node_id[:12])
            attempts[(ev.model, ev.attempt)] = AttemptRow(
                attempt=ev.attempt, node_id=ev.node_id, node=node_names[ev.node_id],
                started_unix_ns=ev.started_unix_ns or ev.unix_ns, gpus=list(ev.gpus))
        elif isinstance(ev, AttemptEnded):
            prev = attempts.get((ev.model, ev.attempt), AttemptRow(attempt=ev.attempt))
            attempts[(ev.model, ev.attempt)] = msgspec.structs.replace(
                prev, ended_unix_ns=ev.unix_ns, ended=ev.ended, reason=ev.reason, status=ev.status,
                servers_not_stopped=ev.servers_not_stopped)
        elif isinstance(ev, ModelFinished):
            finished[ev.model] = ev
        elif isinstance(ev, NodeLost):
            lost.append(ev.node_id)
        elif isinstance(ev, CampaignFinished):
            end = ev
    t0 = starts[0].unix_ns
    t1 = end.unix_ns if end else max((e.unix_ns for e in events), default=t0)
    wall_s = max((t1 - t0) / 1e9, 1e-9)
    rows = []
    for model, fin in finished.items():
        mine = [a for (m, _), a in sorted(attempts.items(), key=lambda kv: kv[0][1]) if m == model]
        rows.append(CampaignRow(model=model, status=fin.status, failed_stage=fin.failed_stage, reason=fin.reason,
                                reproduce=fin.reproduce, journal=fin.journal, run_folder=fin.run_folder,
                                kept_on_node=fin.kept_on_node, attempts=mine))
    # Every node the cluster had at a start, idle ones too: an idle node is a finding in itself.
    use: dict[str, list[AttemptRow]] = {nid: [] for s in starts for nid in (n.node_id for n in s.nodes)}
    for a in attempts.values():
        if a.node_id:
            use.setdefault(a.node_id, []).append(a)
    nodes = [NodeUse(node_id=nid, node=node_names.get(nid, nid[:12]), attempts=len(rows_),
                     busy_s=round(sum(((a.ended_unix_ns or t1) - a.started_unix_ns) / 1e9 for a in rows_), 3),
                     share_of_wall=round(sum(((a.ended_unix_ns or t1) - a.started_unix_ns) / 1e9
                                             for a in rows_) / wall_s, 4), lost=nid in lost)
             for nid, rows_ in sorted(use.items(), key=lambda kv: node_names.get(kv[0], kv[0]))]
    by_status: dict[str, int] = {}
    for fin in finished.values():
        by_status[fin.status] = by_status.get(fin.status, 0) + 1
    planned = set(submitted) | {m for s in starts for m in s.models}
    unaccounted = sorted(planned - set(finished))
    return CampaignReport(
        campaign_id=starts[0].campaign_id, status=end.status if end else "interrupted",
        exit_code=end.exit_code if end else None,
        reason=end.reason if end else "campaign.jsonl has no campaign_finished line: the driver died",
        sessions=len(starts), started_unix_ns=t0, finished_unix_ns=t1, wall_s=round(wall_s, 3),
        address=starts[-1].address, rows=sorted(rows, key=lambda r: r.model), nodes=nodes, nodes_lost=lost,
        accounting=Accounting(models=len(planned), finished=len(finished), by_status=by_status,
                              unaccounted=unaccounted, balanced=not unaccounted))
