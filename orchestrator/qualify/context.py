"""One model's qualification state, shared by its stages and its reference side: a typed context.
Holds what the stages share (run scope, adapters, dataset requests, answers, correlator, gate) and the few
acts every stage repeats (ask over HTTP and journal it, open and close a stage). Decides nothing."""

from __future__ import annotations

import msgspec

from orchestrator.config import ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import ArmRequest, Dataset, parse_session_key
from orchestrator.events import NoninferiorityResult, PhaseDetail, PhaseFinished, PhaseStarted
from orchestrator.judge.paired import ChosenGate, Judged
from orchestrator.live.server import LivePage
from orchestrator.qualify.answers import AnswerBook
from orchestrator.qualify.asking import ask_journaled
from orchestrator.qualify.shared import SharedBaselines
from orchestrator.run import RunScope
from orchestrator.spine.ports import ChatAnswer, ChatSession, OwnerFiles, Toolkit

__all__ = ["QualifyOptions", "ModelRun", "StageFailed"]


class QualifyOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml."""

    models: list[str] = []
    plan_only: bool = False
    skip_aiperf: bool = False
    argv: list[str] = []
    # TRTMC's qualification files per model name (qualify --trtmc, or its noninferiority source).
    owners: dict[str, OwnerFiles] = {}
    # --serve: the live page, listening since before the run (None: no page).
    serve: LivePage | None = None


class StageFailed(Exception):
    """Ends one model's qualification at a stage, with the status and reason for its row."""

    def __init__(self, stage: str, status: str, reason: str) -> None:
        super().__init__(reason)
        self.stage, self.status, self.reason = stage, status, reason


class ModelRun:
    """Everything one model's stages share: its run scope, dataset, prepared arm requests and answers.

    `gate` is the model's non-inferiority gate (qualify/baseline_side.py's resolve_gate): None without a
    reference, a sentence when none applies. The correlator is started by the server stage.
    """

    source = "qualify"  # what its journaled events say they came from (the capability probe's ProbeHost)

    def __init__(self, run: RunScope, model: ModelConfig, dataset: Dataset, requests: list[ArmRequest],
                 opts: QualifyOptions, toolkit: Toolkit, gate: ChosenGate | str | None,
                 shared_baselines: SharedBaselines | None = None) -> None:
        self.run = run
        self.toolkit = toolkit
        self.bus = run.bus
        self.cfg = run.config
        self.model = model
        self.dataset = dataset
        self.requests = requests
        self.opts = opts
        self.gate = gate
        self.http_answers: dict[tuple[str, str], str | None] = {}
        self.native_answers: dict[tuple[str, str], str | None] = {}
        self.aiperf_shell = ""
        self.plan = ""  # --plan: what a run would do
        self.bundle_sha256 = ""
        self.status = "implemented"
        # The live tap carries the answers: give it a moment after the export half and the server record.
        self.correlator = Correlator(run.bus, key_parser=parse_session_key, answer_grace_s=2.0)
        self._rid = 0
        # One limit on every path (probe, correctness, native, AIPerf), so their answers compare.
        self.max_tokens = run.config.workload.max_tokens
        self.answers = AnswerBook(run.bus, model, dataset, self.max_tokens)
        # The model's correctness answers by (item, arm), paired with its reference's (qualify/baseline_side.py).
        self.candidate_judged: dict[tuple[str, str], list[Judged]] = {}
        self.noninferiority: NoninferiorityResult | None = None
        # Reference answers this run already has, by reference key (models sharing one reference ask it once).
        self.shared_baselines = shared_baselines if shared_baselines is not None else SharedBaselines()

    def request_id(self, stage: str) -> str:
        """A fresh X-Request-ID within trtmc-server's 128 characters (the model name is already within
        its character set, config.Name): a long name is cut, never the counter that keeps ids unique."""
        self._rid += 1
        tail = f"-{stage}-{self._rid:05d}"
        return f"aqb-{self.model.name[:128 - 4 - len(tail)]}{tail}"

    async def ask(self, client: ChatSession, req: ArmRequest, stage: str) -> ChatAnswer:
        """Ask over HTTP and journal the exchange as a ClientRecord, so the correlator joins it with the
        server's record and accounts it in the window `<model>/<stage>` like any AIPerf request."""
        return await ask_journaled(self.bus, client, req, request_id=self.request_id(stage),
                                   window=f"{self.model.name}/{stage}", source=self.source)

    def client(self, base_url: str) -> ChatSession:
        return self.toolkit.chat_client(base_url, self.model.name, timeout_s=self.cfg.workload.request_timeout_s,
                                        max_tokens=self.max_tokens)

    async def close_window(self, stage: str) -> None:
        await self.correlator.close_window(f"{self.model.name}/{stage}")

    async def phase_start(self, phase: str, detail: PhaseDetail | None = None) -> None:
        await self.bus.publish(PhaseStarted(source="qualify", phase=phase, model=self.model.name, detail=detail))

    async def phase_end(self, phase: str, outcome: str, reason: str = "", detail: PhaseDetail | None = None) -> None:
        await self.bus.publish(PhaseFinished(source="qualify", phase=phase, model=self.model.name, outcome=outcome,
                                             reason=reason, detail=detail))
