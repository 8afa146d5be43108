"""One `aqbench ab` session's blocks, read back from its journal: per block its side, its profiling
requests (latencies by item) and its answers' verdicts per arm; the plan as journaled. Computes no statistics."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.config import CompareConfig
from orchestrator.events import (
    AbPhase,
    AiperfRunPhase,
    HostSampled,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RunFinished,
    RunStarted,
    VerdictReached,
)
from orchestrator.judge.intervals import RateChange
from orchestrator.spine.journal import iter_journal

__all__ = ["SERIES", "BlockSamples", "Session", "load_session", "window_name"]

SERIES = (("client", "client latency", "request_latency_ms"), ("handler", "server handler", "handler_ms"),
          ("model_call", "server model call", "model_call_ms"))
_WINDOW = re.compile(r"/ab-(\d+)-([AB])$")


def window_name(model: str, index: int, side: str) -> str:
    """The AIPerf window of block `index` (0-based) on `side` (A or B)."""
    return f"{model}/ab-{index:02d}-{side}"


@dataclass
class BlockSamples:
    """One block's profiling requests: latencies per series, each with its item (`item_id/arm`)."""

    index: int
    side: str
    issued: int = 0
    ok: int = 0
    values: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s, _l, _a in SERIES})
    items: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s, _l, _a in SERIES})
    verdicts: dict[str, dict[str, int]] = field(default_factory=dict)  # arm -> verdict -> answers (VerdictReached)
    host: list[HostSampled] = field(default_factory=list)  # the host's samples taken while the block ran


@dataclass
class Session:
    """The journal's plan, its blocks by index, and how the run ended."""

    journal: Path
    plan: AbPhase | None = None
    finished: AbPhase | None = None
    blocks: dict[int, BlockSamples] = field(default_factory=dict)
    run_id: str = ""
    status: str = "in progress"
    compare: CompareConfig | None = None  # the run's [compare], as RunStarted journaled it
    request_blocks: dict[str, int] = field(default_factory=dict)  # request id -> its block
    memo: dict[tuple[str, int, int, int, int], RateChange | None] = field(default_factory=dict)  # the verdict's per-pair figures
    quantiles: dict[tuple[str, int, int, float], float | None] = field(default_factory=dict)  # the verdict's block quantiles


def load_session(journal: Path) -> Session:
    """Fold an `ab` journal (blocks; streams it once)."""
    session = Session(journal=journal)
    running: BlockSamples | None = None  # the block whose AIPerf window is open
    for ev in iter_journal(journal):
        if isinstance(ev, RunStarted):
            session.run_id = ev.run_id
            session.compare = ev.config.compare if ev.config is not None else None
        elif isinstance(ev, RunFinished):
            session.status = ev.status
        elif isinstance(ev, PhaseStarted) and isinstance(ev.detail, AbPhase):
            session.plan = ev.detail
        elif isinstance(ev, PhaseStarted) and isinstance(ev.detail, AiperfRunPhase) and (
                m := _WINDOW.search(ev.detail.window)):
            running = session.blocks.setdefault(int(m[1]), BlockSamples(index=int(m[1]), side=m[2]))
        elif isinstance(ev, PhaseFinished) and ev.phase == "aiperf":
            running = None
        elif isinstance(ev, HostSampled) and running is not None:
            running.host.append(ev)
        elif isinstance(ev, PhaseFinished) and isinstance(ev.detail, AbPhase):
            session.finished = ev.detail
        elif isinstance(ev, RequestCorrelated) and ev.phase == "profiling" and (m := _WINDOW.search(ev.window)):
            block = session.blocks.setdefault(int(m[1]), BlockSamples(index=int(m[1]), side=m[2]))
            block.issued += 1
            session.request_blocks[ev.request_id] = block.index
            if not ev.ok:
                continue
            block.ok += 1
            item = f"{ev.item_id or ev.conversation_id}/{ev.arm}"
            for short, _label, attr in SERIES:
                value = getattr(ev, attr)
                if value is not None and value > 0:
                    block.values[short].append(float(value))
                    block.items[short].append(item)
        elif isinstance(ev, VerdictReached) and ev.source == "ab" and ev.request_id in session.request_blocks:
            arm = session.blocks[session.request_blocks[ev.request_id]].verdicts.setdefault(ev.arm, {})
            arm[ev.verdict] = arm.get(ev.verdict, 0) + 1
    return session
