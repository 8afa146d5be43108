"""One run's samples for `aqbench compare`, read from its journal in one streaming pass. Computes no
statistics."""

from __future__ import annotations

import json
import math
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.config import Config
from orchestrator.events import (
    AiperfPhase,
    AiperfRunPhase,
    AiperfStarted,
    AnswerIncomplete,
    AnyEvent,
    DatasetPhase,
    GpuSampled,
    HostFacts,
    HostSampled,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RunFinished,
    RunStarted,
    ServerPhase,
    ServerReady,
    VerdictReached,
)
from orchestrator.spine.journal import TornLine, iter_journal

__all__ = ["AnswerSeen", "ItemKey", "ModelSamples", "RunSamples", "load_run", "LOAD_PATH", "WORKLOAD_FLAGS_INFO"]

ItemKey = tuple[str, str, str]  # (path, item_id, arm)
# Answers of AIPerf requests are the `aiperf` path, as qualify's VerdictReached names it.
LOAD_PATH = "aiperf"
# AIPerf flags whose values differ between comparable runs (paths, ports) or only size the run. --prompt-corpus
# only shapes synthetic prompts, which aqbench's input file never uses (adapters/aiperf/command.py FAST_START_ARGS):
# runs from before it was added compare with runs after.
_WORKLOAD_FLAGS_SKIPPED = frozenset({"--url", "--input-file", "--artifact-dir", "--tokenizer", "--model",
                                     "--prompt-corpus"})
WORKLOAD_FLAGS_INFO = frozenset({"--request-count", "--warmup-request-count"})
_NAN = math.nan


@dataclass
class AnswerSeen:
    """The first answer of an item on one path, whether later answers differed, and its verdicts."""

    first: str | None
    varied: bool = False
    verdicts: Counter[str] = field(default_factory=Counter)
    kind: str = ""
    defects: tuple[str, ...] = ()

    @property
    def right(self) -> bool | None:
        """Every verdict correct (None: not scored)."""
        total = sum(self.verdicts.values())
        return None if total == 0 else self.verdicts["correct"] == total

    @property
    def verdict(self) -> str:
        """The item's verdict word: the one verdict it always got, else the commonest non-correct one."""
        if not self.verdicts:
            return ""
        if len(self.verdicts) == 1:
            return next(iter(self.verdicts))
        return max((v for v in self.verdicts if v != "correct"), key=lambda v: self.verdicts[v])


@dataclass
class ModelSamples:
    """One model's profiling requests (arrays, NaN where a value is missing) and answers."""

    name: str
    issued: int = 0
    ok: int = 0
    causes: Counter[str] = field(default_factory=Counter)
    client_ms: array[float] = field(default_factory=lambda: array("d"))
    handler_ms: array[float] = field(default_factory=lambda: array("d"))
    model_call_ms: array[float] = field(default_factory=lambda: array("d"))
    end_ns: array[int] = field(default_factory=lambda: array("q"))
    item: array[int] = field(default_factory=lambda: array("l"))
    # (item_id, arm) -> index, for every item sent in profiling (answered or not)
    items: dict[tuple[str, str], int] = field(default_factory=dict)
    answers: dict[ItemKey, AnswerSeen] = field(default_factory=dict)
    workload: dict[str, str] = field(default_factory=dict)
    arms: list[str] = field(default_factory=list)
    windows: set[str] = field(default_factory=set)
    timing_scopes: set[str] = field(default_factory=set)  # what model_call_ms measured (server records)

    def item_names(self) -> list[tuple[str, str]]:
        """(item_id, arm) by index."""
        names = [("", "")] * len(self.items)
        for key, index in self.items.items():
            names[index] = key
        return names


@dataclass
class RunSamples:
    """Everything `compare` needs from one journal: provenance facts and per-model samples."""

    journal: Path
    started: RunStarted | None = None
    finished: RunFinished | None = None
    torn: TornLine | None = None
    dataset: dict[str, str] = field(default_factory=dict)  # name, identity, path, items (from qualify)
    aiperf_versions: set[str] = field(default_factory=set)
    gpus: set[str] = field(default_factory=set)
    server_models: str = ""
    bundle_sha256: set[str] = field(default_factory=set)
    models: dict[str, ModelSamples] = field(default_factory=dict)
    host_samples: list[HostSampled] = field(default_factory=list)  # the host's condition while it ran

    @property
    def config(self) -> Config | None:
        return self.started.config if self.started else None

    @property
    def host(self) -> HostFacts:
        return self.started.host if self.started else HostFacts()

    def deterministic(self, model: str) -> bool:
        """The model's `correctness.deterministic` in the run's config snapshot (True when absent)."""
        cfg = self.config
        conf = next((m for m in cfg.models if m.name == model), None) if cfg else None
        return conf.correctness.deterministic if conf else True


# Per profiling request of an AIPerf window it keeps five numbers in compact arrays; per dataset item and
# path the first answer, the verdicts and the completeness defects; never the events themselves.
class _Loader:
    """Folds events into RunSamples; handlers by event type."""

    def __init__(self, journal: Path) -> None:
        self.run = RunSamples(journal=journal)
        self.window_model: dict[str, str] = {}
        # Each handler takes its own event type, which one dict's value type cannot say.
        self.handlers: dict[type, Callable[[Any], None]] = {
            RunStarted: self._run_started, RunFinished: self._run_finished, PhaseStarted: self._phase_started,
            PhaseFinished: self._phase_finished, AiperfStarted: self._aiperf_started, GpuSampled: self._gpu,
            ServerReady: self._server_ready, RequestCorrelated: self._correlated, VerdictReached: self._verdict,
            AnswerIncomplete: self._incomplete, HostSampled: self.run.host_samples.append,
        }

    def add(self, ev: AnyEvent) -> None:
        handler = self.handlers.get(type(ev))
        if handler is not None:
            handler(ev)

    def model(self, name: str) -> ModelSamples:
        if (m := self.run.models.get(name)) is None:
            m = self.run.models[name] = ModelSamples(name=name)
        return m

    def _run_started(self, ev: RunStarted) -> None:
        self.run.started = ev

    def _run_finished(self, ev: RunFinished) -> None:
        self.run.finished = ev

    def _phase_started(self, ev: PhaseStarted) -> None:
        if ev.phase == "aiperf" and ev.model:
            m = self.model(ev.model)
            d = ev.detail
            arms = (d.settings.arms if isinstance(d, AiperfPhase) and d.settings else
                    d.arms if isinstance(d, AiperfRunPhase) else [])
            m.arms = m.arms or list(arms)

    def _phase_finished(self, ev: PhaseFinished) -> None:
        d = ev.detail
        if isinstance(d, DatasetPhase):
            self.run.dataset = {"name": d.name, "identity": d.identity, "path": d.path,
                                "items": "" if d.items is None else str(d.items)}
        elif isinstance(d, ServerPhase) and d.bundle_sha256:
            self.run.bundle_sha256.add(d.bundle_sha256)

    def _aiperf_started(self, ev: AiperfStarted) -> None:
        # Windows are `<model>/<stage>`; model names may hold "/" themselves.
        name = ev.window.rsplit("/", 1)[0]
        self.window_model[ev.window] = name
        m = self.model(name)
        m.windows.add(ev.window)
        if ev.version:
            self.run.aiperf_versions.add(ev.version)
        if not m.workload:
            m.workload = _workload(ev.argv)

    def _gpu(self, ev: GpuSampled) -> None:
        self.run.gpus.add(f"{ev.index}: {ev.name} ({ev.memory_total_bytes / 2**30:.0f} GiB)")

    def _server_ready(self, ev: ServerReady) -> None:
        if not self.run.server_models:
            ids = [str(m.get("id", "")) + (f" ({m['owned_by']})" if m.get("owned_by") else "") for m in ev.models]
            self.run.server_models = ", ".join(ids) or json.dumps(ev.models, sort_keys=True)[:200]

    def _correlated(self, ev: RequestCorrelated) -> None:
        # The hot path (one call per request): no helper calls unless an answer is new or differs.
        name = self.window_model.get(ev.window)
        if name is None or ev.phase != "profiling":
            return  # probe windows (capability, correctness) and warmup are not the load's figures
        m = self.run.models[name]
        item_key = (ev.item_id or ev.conversation_id, ev.arm)
        index = m.items.setdefault(item_key, len(m.items))
        m.issued += 1
        m.causes[ev.cause] += 1
        if not ev.ok:
            return
        m.ok += 1
        latency, handler, call = ev.request_latency_ms, ev.handler_ms, ev.model_call_ms
        m.client_ms.append(_NAN if latency is None else latency)
        m.handler_ms.append(_NAN if handler is None else handler)
        m.model_call_ms.append(_NAN if call is None else call)
        m.end_ns.append(ev.request_end_ns or 0)
        m.item.append(index)
        if ev.timing_scope and ev.timing_scope not in m.timing_scopes:
            m.timing_scopes.add(ev.timing_scope)
        if ev.item_id:
            seen = m.answers.get((LOAD_PATH, ev.item_id, ev.arm))
            if seen is None or (ev.answer is not None and ev.answer != seen.first):
                self._answer(m, (LOAD_PATH, ev.item_id, ev.arm), ev.answer)

    def _answer(self, m: ModelSamples, key: ItemKey, text: str | None) -> AnswerSeen:
        seen = m.answers.get(key)
        if seen is None:
            seen = m.answers[key] = AnswerSeen(first=text)
        elif text is not None and seen.first != text:
            if seen.first is None:
                seen.first = text
            else:
                seen.varied = True
        return seen

    def _verdict(self, ev: VerdictReached) -> None:
        seen = self._answer(self.model(ev.model), (ev.path, ev.item_id, ev.arm), ev.answer)
        seen.verdicts[ev.verdict] += 1
        seen.kind = seen.kind or ev.item_kind

    def _incomplete(self, ev: AnswerIncomplete) -> None:
        if ev.path == "capability" or not ev.item_id:
            return
        seen = self._answer(self.model(ev.model), (ev.path, ev.item_id, ev.arm), ev.answer)
        seen.defects = tuple(sorted(set(seen.defects) | set(ev.defects)))


def _workload(argv: list[str]) -> dict[str, str]:
    """AIPerf's flags and values, less those that name paths, ports or the model."""
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        flag = argv[i]
        i += 1
        if not flag.startswith("--"):
            continue  # the program and its subcommand
        value = "true"
        if i < len(argv) and not argv[i].startswith("--"):
            value, i = argv[i], i + 1
        if flag not in _WORKLOAD_FLAGS_SKIPPED:
            out[flag] = f"{out[flag]} {value}" if flag in out else value
    return out


def load_run(journal: Path) -> RunSamples:
    """Read one journal (blocks; streams, so memory grows with requests, not events)."""
    loader = _Loader(journal)
    torn: list[TornLine] = []
    for ev in iter_journal(journal, on_torn=torn.append):
        loader.add(ev)
    loader.run.torn = torn[0] if torn else None
    return loader.run
