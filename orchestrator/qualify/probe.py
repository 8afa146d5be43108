"""qualify's capability probe, callable by any command that serves a model (qualify, sweep): does the server take
audio and a question and answer from the audio? Judged by qualify/capability.py; journals each check and the phase.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Protocol

import anyio
import msgspec

from orchestrator.config import ModelConfig
from orchestrator.correlate import Correlator
from orchestrator.dataset import ArmRequest, Dataset, prepare_arms
from orchestrator.events import CapabilityPhase, CapabilityProbed, PhaseDetail, PhaseFinished, PhaseStarted
from orchestrator.qualify.answers import AnswerBook, answered_http
from orchestrator.qualify.asking import ask_journaled
from orchestrator.qualify.capability import (
    AUDIO_QA_TASKS,
    CheckResult,
    ProbeAnswer,
    judge_conditioning,
    judge_text_only,
    judge_transcription_only,
    judge_transport,
    select_probe_pairs,
)
from orchestrator.qualify.context import StageFailed
from orchestrator.spine.ports import ChatAnswer, ChatSession, EventSink, Toolkit

__all__ = ["ProbeHost", "ProbeSession", "capability_probe"]


# The probe needs a host (ProbeHost): what it asks with and journals to (CapabilityProbed, the `capability` phase).
# qualify's ModelRun is one; a command without a ModelRun builds a ProbeSession.
class ProbeHost(Protocol):
    """What the capability probe asks with and journals to."""

    @property
    def source(self) -> str: ...
    @property
    def bus(self) -> EventSink: ...
    @property
    def model(self) -> ModelConfig: ...
    @property
    def dataset(self) -> Dataset: ...
    @property
    def requests(self) -> list[ArmRequest]: ...
    @property
    def answers(self) -> AnswerBook: ...

    async def ask(self, client: ChatSession, req: ArmRequest, stage: str) -> ChatAnswer: ...
    def client(self, base_url: str) -> ChatSession: ...
    async def close_window(self, stage: str) -> None: ...
    async def phase_start(self, phase: str, detail: PhaseDetail | None = None) -> None: ...
    async def phase_end(self, phase: str, outcome: str, reason: str = "", detail: PhaseDetail | None = None) -> None: ...


class ProbeSession:
    """A probe host for a command without a ModelRun: one model served, its requests, a running correlator."""

    def __init__(self, *, source: str, bus: EventSink, toolkit: Toolkit, model: ModelConfig, dataset: Dataset,
                 requests: list[ArmRequest], correlator: Correlator, request_timeout_s: float,
                 max_tokens: int | None) -> None:
        self.source, self.bus, self.toolkit, self.model, self.dataset = source, bus, toolkit, model, dataset
        self.requests, self.correlator = requests, correlator
        self.request_timeout_s, self.max_tokens = request_timeout_s, max_tokens
        self.answers = AnswerBook(bus, model, dataset, max_tokens)
        self._rid = 0

    async def ask(self, client: ChatSession, req: ArmRequest, stage: str) -> ChatAnswer:
        self._rid += 1
        tail = f"-{stage}-{self._rid:05d}"
        return await ask_journaled(self.bus, client, req, request_id=f"aqb-{self.model.name[:128 - 4 - len(tail)]}{tail}",
                                   window=f"{self.model.name}/{stage}", source=self.source)

    def client(self, base_url: str) -> ChatSession:
        return self.toolkit.chat_client(base_url, self.model.name, timeout_s=self.request_timeout_s,
                                        max_tokens=self.max_tokens)

    async def close_window(self, stage: str) -> None:
        await self.correlator.close_window(f"{self.model.name}/{stage}")

    async def phase_start(self, phase: str, detail: PhaseDetail | None = None) -> None:
        await self.bus.publish(PhaseStarted(source=self.source, phase=phase, model=self.model.name, detail=detail))

    async def phase_end(self, phase: str, outcome: str, reason: str = "", detail: PhaseDetail | None = None) -> None:
        await self.bus.publish(PhaseFinished(source=self.source, phase=phase, model=self.model.name, outcome=outcome,
                                             reason=reason, detail=detail))


# A busy answer to a probe request asked beside others, and the waits before asking it again (about 4 s in all).
_BUSY_STATUSES = (429, 503)
_BUSY_RETRY_S = (0.25, 0.5, 1.0, 2.0)


async def capability_probe(m: ProbeHost, base_url: str, wire_dir: Path, *, in_flight: int = 1,
                           cache: Path | None = None) -> None:
    """qualify's capability stage against the server at `base_url`: journaled as the `capability` phase, its
    requests in the window `<model>/capability`; raises StageFailed (status unsupported, blocked or failed)
    with the evidence when the server cannot do audio QA. `wire_dir` names the probe's extra clips (their
    bytes go into the clip cache `cache`).
    `in_flight`: how many of the conditioning pairs' requests are open at once (the route's two requests are
    always asked one after the other); the answers and their order in the evidence do not depend on it. Asked
    several at a time, a request the server answers busy (429, 503) is asked again after a short wait."""
    await m.phase_start("capability")
    ds = m.dataset
    by_key = {(r.item_id, r.arm): r for r in m.requests}
    pairs = select_probe_pairs(ds)
    probe_items = sorted({i for p in pairs for i in (p.first, p.second)},
                         key=lambda i: [it.id for it in ds.items].index(i))
    # The probe asks its items on both arms, and the first audio row, even where the correctness stage runs
    # fewer arms or a conditioning subset.
    missing = [(i, arm) for i in [ds.items[0].id, *probe_items] for arm in ("audio", "silence")
               if (i, arm) not in by_key]
    if missing:
        extra = await anyio.to_thread.run_sync(functools.partial(
            prepare_arms, ds, ("audio", "silence"), wire_dir, cache=cache, only=missing))
        by_key.update({(r.item_id, r.arm): r for r in extra})
    async with m.client(base_url) as client:
        first = next((r for (_, arm), r in by_key.items() if arm == "audio"), None)
        if first is None:
            raise StageFailed("capability", "failed", "the dataset has no audio-arm requests to probe with")
        with_audio = await m.ask(client, first, "capability")
        text_only = await m.ask(client, msgspec.structs.replace(first, audio_path=None), "capability")
        # The text-only request withholds the clip on purpose: its answer is evidence of the route, not an
        # answer to judge (the reference echoes the question from text alone), so only the other is checked.
        await m.answers.probe(first, answered_http(with_audio))
        ids = (with_audio.request_id, text_only.request_id)
        transport = judge_transport(with_audio.status, with_audio.body or with_audio.error, text_only.status,
                                    text_only.body or text_only.error, request_ids=ids)
        await _publish_check(m, transport)
        if not transport.passed:
            await m.close_window("capability")
            native = m.model.native_task in AUDIO_QA_TASKS
            status = "blocked" if native and with_audio.status == 400 and text_only.status == 200 else "unsupported"
            if status == "blocked":
                reason = (f"{transport.reason}; the native Task {m.model.native_task} takes audio and a question, "
                          f"but no served route reaches it")
            else:
                reason = transport.reason
            if with_audio.status not in (200, 400) or text_only.status != 200:
                status = "failed"
            await m.phase_end("capability", "failed", reason, CapabilityPhase(answers_checked=m.answers.checked["capability"]))
            raise StageFailed("capability", status, reason)

        asked = [req for item_id in probe_items for arm in ("audio", "silence")
                 if (req := by_key.get((item_id, arm))) is not None]
        replies: list[ChatAnswer | None] = [None] * len(asked)
        limiter = anyio.CapacityLimiter(max(1, in_flight))

        async def ask_one(i: int, req: ArmRequest) -> None:
            async with limiter:
                reply = await m.ask(client, req, "capability")
                # Several open at once may meet the server's admission limit (one replica: 429 server_busy):
                # that is its capacity, not a refusal of audio, so the request is asked again, a few times.
                for wait_s in _BUSY_RETRY_S if in_flight > 1 else ():
                    if reply.status not in _BUSY_STATUSES:
                        break
                    await anyio.sleep(wait_s)
                    reply = await m.ask(client, req, "capability")
                replies[i] = reply
                await m.answers.probe(req, answered_http(reply))

        if in_flight <= 1:  # one at a time in this task: an error reaches the caller as itself, not grouped
            for i, req in enumerate(asked):
                await ask_one(i, req)
        else:
            async with anyio.create_task_group() as tg:
                for i, req in enumerate(asked):
                    tg.start_soon(ask_one, i, req)
        answers = [ProbeAnswer(item_id=req.item_id, arm=req.arm, answer=reply.text, status=reply.status,
                               request_id=reply.request_id)
                   for req, reply in zip(asked, replies, strict=True) if reply is not None]
    await m.close_window("capability")
    checks = [judge_conditioning(ds, pairs, answers), judge_text_only(answers),
              judge_transcription_only([ds.item(i) for i in probe_items], answers)]
    for check in checks:
        await _publish_check(m, check)
    failed = [c for c in checks if not c.passed]
    if failed:
        reason = "; ".join(c.reason for c in failed)
        await m.phase_end("capability", "failed", reason, CapabilityPhase(answers_checked=m.answers.checked["capability"]))
        raise StageFailed("capability", "unsupported", reason)
    await m.phase_end("capability", "passed", "; ".join(c.reason for c in checks),
                      CapabilityPhase(answers_checked=m.answers.checked["capability"]))


async def _publish_check(m: ProbeHost, check: CheckResult) -> None:
    await m.bus.publish(CapabilityProbed(source=m.source, model=m.model.name, check=check.check,  # type: ignore[arg-type]
                                         passed=check.passed, reason=check.reason, evidence=check.evidence))
