"""The soak's answer tracker: scores each correlated answer and counts it into its window."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import anyio
import msgspec
from anyio.abc import TaskStatus

from orchestrator.base.errors import DatasetError
from orchestrator.config import ModelConfig
from orchestrator.dataset import (
    Dataset,
)
from orchestrator.events import (
    AnswerIncomplete,
    AnyEvent,
    Event,
    ProcessSampled,
    RequestCorrelated,
    ResourceSampled,
    ServerExited,
    ServerRestarting,
    VerdictReached,
)
from orchestrator.judge.answers import judge_answer
from orchestrator.judge.gates import ScoredAnswer
from orchestrator.soak.window import WindowAccumulator, WindowStats
from orchestrator.spine.bus import Bus, Subscription

__all__ = ["SoakTracker"]


class SoakTracker:
    """Lossless bus subscriber: folds each open window's joined requests (RequestCorrelated), samples, exits
    and restarts into its WindowAccumulator, and scores each profiling answer against its dataset item
    (publishing VerdictReached). Windows are time cuts of one load and several are open at once (a window closes only once its
    last request can have ended): requests go to the window the join named, resource samples, restarts
    and exits to the open window whose start is the latest at or before their time. Publishing never
    waits on its own full queue (it drains that queue into a local backlog)."""

    def __init__(self, bus: Bus, dataset: Dataset, model: ModelConfig, *, size: int = 8192,
                 max_tokens: int | None = None) -> None:
        self._bus = bus
        self._max_tokens = max_tokens  # the limit AIPerf sends (workload.max_tokens), for length_limit
        self._dataset = dataset
        self._model = model
        self._size = size
        self._sub: Subscription | None = None
        self._backlog: deque[AnyEvent] = deque()
        self._open: dict[str, WindowAccumulator] = {}
        self._current: WindowAccumulator | None = None
        self._seen = anyio.Event()
        self.last_seq = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._bus.subscribe("soak", size=self._size) as sub:
            self._sub = sub
            task_status.started()
            async for batch in sub.batches():
                self._backlog.extend(batch)
                while self._backlog:
                    ev = self._backlog.popleft()
                    for out in self._handle(ev):
                        await self._publish(out)
                    self.last_seq = max(self.last_seq, ev.seq)
                    self._seen.set()
                    self._seen = anyio.Event()

    async def _publish(self, ev: Event) -> None:
        assert self._sub is not None  # published only from run(), inside its subscription
        await self._sub.publish(ev, spill=self._backlog.append)

    async def wait_seen(self, seq: int, timeout_s: float = 30.0) -> None:
        """Block until every event up to `seq` has been handled (and its verdicts published)."""
        with anyio.move_on_after(timeout_s):
            while self.last_seq < seq:
                await self._seen.wait()

    @property
    def current(self) -> WindowAccumulator | None:
        """The accumulator of the window opened last, while open (None when every window is closed)."""
        return self._current

    def at(self, unix_ns: int) -> WindowAccumulator | None:
        """The open window whose start is the latest at or before `unix_ns` (else the earliest open)."""
        chosen: WindowAccumulator | None = None
        for acc in self._open.values():
            if acc.start_unix_ns <= unix_ns and (chosen is None or acc.start_unix_ns >= chosen.start_unix_ns):
                chosen = acc
        if chosen is None and self._open:
            chosen = min(self._open.values(), key=lambda a: a.start_unix_ns)
        return chosen

    def window(self, window: str) -> WindowAccumulator | None:
        """An open window's accumulator by name."""
        return self._open.get(window)

    def open_window(self, index: int, start_unix_ns: int, segment: int = 0) -> WindowAccumulator:
        acc = WindowAccumulator(index, start_unix_ns, criteria=self._model.correctness, segment=segment)
        self._open[acc.window] = self._current = acc
        return acc

    def close_window(self, window: str, end_unix_ns: int, *, aiperf_classification: str = "",
                     accounting_balanced: bool | None = None, gap_before_s: float | None = None,
                     aiperf_launch_unix_ns: int | None = None, aiperf_exit_unix_ns: int | None = None) -> WindowStats:
        """Close an open window (WindowAccumulator.close with the loop's facts about it) and forget it."""
        acc = self._open.pop(window)
        if acc is self._current:
            self._current = None
        return acc.close(end_unix_ns, aiperf_classification=aiperf_classification,
                         accounting_balanced=accounting_balanced, gap_before_s=gap_before_s,
                         aiperf_launch_unix_ns=aiperf_launch_unix_ns, aiperf_exit_unix_ns=aiperf_exit_unix_ns)

    def discard_window(self, window: str) -> None:
        """Drop an open window that the load never reached (nothing of it is kept)."""
        acc = self._open.pop(window, None)
        if acc is self._current:
            self._current = max(self._open.values(), key=lambda a: a.start_unix_ns, default=None)

    def _handle(self, ev: AnyEvent) -> Iterable[Event]:
        if isinstance(ev, RequestCorrelated):
            return self._request(ev)
        elif isinstance(ev, ResourceSampled | ProcessSampled | ServerExited | ServerRestarting):
            self._sampled_or_server(ev, self.at(ev.ts_ns) if self._open else None)
        return ()

    def _request(self, ev: RequestCorrelated) -> Iterable[Event]:
        """A correlated request counts in the window the join named (none once that window closed)."""
        acc = self._open.get(ev.window)
        if acc is None:
            return ()
        acc.add_request(phase=ev.phase, ok=ev.ok, cause=ev.cause, request_latency_ms=ev.request_latency_ms,
                        handler_ms=ev.handler_ms, model_call_ms=ev.model_call_ms,
                        request_start_ns=ev.request_start_ns, request_end_ns=ev.request_end_ns,
                        incarnation=ev.incarnation, item_id=ev.item_id)
        if ev.phase == "profiling" and ev.ok:
            return self._verdict(acc, ev)
        return ()

    def _sampled_or_server(self, ev: ResourceSampled | ProcessSampled | ServerExited | ServerRestarting,
                           acc: WindowAccumulator | None) -> None:
        """Memory samples, unexpected exits and restarts go to the open window of their time."""
        if isinstance(ev, ResourceSampled):
            if acc is not None:
                acc.add_resource(ev.rss_bytes, ev.gpu_memory_bytes)
        elif isinstance(ev, ProcessSampled):
            if acc is not None:
                acc.add_process(ev.role, ev.rss_bytes)
        elif isinstance(ev, ServerExited):
            if not ev.expected and acc is not None:
                acc.add_unexpected_exit()
        elif acc is not None:
            acc.add_restart()

    def _verdict(self, acc: WindowAccumulator, ev: RequestCorrelated) -> tuple[Event, ...]:
        """The answer's VerdictReached, after its AnswerIncomplete when it is not whole. A missing text
        with a count of 0 is an empty answer; a missing text otherwise was not observed (an error)."""
        model = self._model
        try:
            item = self._dataset.item(ev.item_id)
        except (KeyError, DatasetError):
            acc.add_verdict(ScoredAnswer(item_id=ev.item_id, arm=ev.arm, kind="", verdict="error"))
            return (VerdictReached(source="soak", model=model.name, item_id=ev.item_id, arm=ev.arm, path="aiperf",
                                   verdict="error", answer=ev.answer, request_id=ev.request_id,
                                   detail=f"conversation {ev.conversation_id!r} maps to no dataset item"),)
        if model.correctness.scorer != "dataset":
            item = msgspec.structs.replace(item, scoring=model.correctness.scorer)
        text = ev.answer if ev.answer is not None or ev.completion_tokens != 0 else ""
        out: list[Event] = []
        if text is None:
            verdict, detail = "error", "the answer text was not observed (live tap)"
        else:
            judged = judge_answer(text, item, question=item.question, completion_tokens=ev.completion_tokens,
                                  max_tokens=self._max_tokens)
            verdict, detail = judged.verdict, judged.detail
            c = judged.completeness
            if not c.complete:
                out.append(AnswerIncomplete(
                    source="soak", model=model.name, path="aiperf", defects=list(c.defects), details=list(c.details),
                    item_id=item.id, arm=ev.arm, request_id=ev.request_id, answer=text[:500],
                    completion_tokens=ev.completion_tokens, max_tokens=self._max_tokens))
        acc.add_verdict(ScoredAnswer(item_id=item.id, arm=ev.arm, kind=item.kind, verdict=verdict))
        out.append(VerdictReached(source="soak", model=model.name, item_id=item.id, arm=ev.arm, path="aiperf",
                                  verdict=verdict, answer=ev.answer, gold=item.answer, item_kind=item.kind,  # type: ignore[arg-type]
                                  scoring=item.scoring, request_id=ev.request_id, detail=detail))
        return tuple(out)
