"""The capability probe's conditioning pairs asked several at a time (sweep's in_flight): the same evidence and
verdicts as one at a time, whatever order the replies come back in, and never more requests open than asked."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import anyio
import msgspec
import pytest

from adapters.chat.http import ChatReply
from orchestrator.config import DatasetConfig, load_config
from orchestrator.dataset import ArmRequest, Dataset, load_dataset, resolve_dataset_path
from orchestrator.events import CapabilityProbed, Event, PhaseFinished
from orchestrator.qualify.answers import AnswerBook
from orchestrator.qualify.probe import capability_probe
from orchestrator.spine.ports import E

ROOT = Path(__file__).resolve().parents[3]


class _Bus:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def publish(self, event: E) -> E:
        self.events.append(event)
        return event


class _Client:
    async def __aenter__(self) -> _Client:
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None


class _Host:
    """A server answering every audio request right, silence with "silence", the text-only request with a
    constant; each later request of the pairs answers sooner than the one before, so that replies come back out
    of order when several are open."""

    source = "test"

    def __init__(self, dataset: Dataset) -> None:
        self.bus = _Bus()
        self.model = load_config(ROOT / "bench.toml").models[0]
        self.dataset = dataset
        self.requests: list[ArmRequest] = []
        self.answers = AnswerBook(self.bus, self.model, dataset, None)
        self.open = self.most_open = self.asked = 0

    async def ask(self, client: _Client, req: ArmRequest, stage: str) -> ChatReply:
        self.asked += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await anyio.sleep(max(0.0, 0.04 - 0.001 * self.asked))
        finally:
            self.open -= 1
        text = ("I am not sure." if req.audio_path is None else "There is only silence." if req.arm == "silence"
                else self.dataset.item(req.item_id).answer)
        return ChatReply(request_id=f"{req.item_id}-{req.arm}-{req.audio_path is None}", status=200, text=text,
                         body="{}", finish_reason="stop", completion_tokens=6)

    def client(self, base_url: str) -> _Client:
        return _Client()

    async def close_window(self, stage: str) -> None:
        return None

    async def phase_start(self, phase: str, detail: object = None) -> None:
        return None

    async def phase_end(self, phase: str, outcome: str, reason: str = "", detail: object = None) -> None:
        await self.bus.publish(PhaseFinished(source=self.source, phase=phase, model=self.model.name, outcome=outcome,
                                             reason=reason))


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_dataset(resolve_dataset_path(DatasetConfig(name="audioqa-v1")))


def _probe(dataset: Dataset, wire: Path, in_flight: int) -> _Host:
    host = _Host(dataset)
    anyio.run(lambda: capability_probe(host, "http://unused", wire, in_flight=in_flight))  # type: ignore[arg-type]
    return host


def test_pairs_asked_several_at_a_time_give_the_same_evidence(dataset: Dataset, tmp_path: Path) -> None:
    one, three = _probe(dataset, tmp_path / "w1", 1), _probe(dataset, tmp_path / "w3", 3)
    assert one.most_open == 1 and three.most_open == 3
    assert one.asked == three.asked > 10
    checks = [[(e.check, e.passed, e.reason, msgspec.to_builtins(e.evidence)) for e in h.bus.events
               if isinstance(e, CapabilityProbed)] for h in (one, three)]
    assert checks[0] == checks[1] and len(checks[0]) == 4 and all(c[1] for c in checks[0])
    [done] = [e for e in three.bus.events if isinstance(e, PhaseFinished)]
    assert done.outcome == "passed"
    assert one.answers.checked["capability"] == three.answers.checked["capability"] == one.asked - 1


class _OneSlot(_Host):
    """A server with one slot, as the reference server with one replica: a request that arrives while another is
    open is answered 429 server_busy."""

    def __init__(self, dataset: Dataset) -> None:
        super().__init__(dataset)
        self.busy = 0

    async def ask(self, client: _Client, req: ArmRequest, stage: str) -> ChatReply:
        if self.open:
            self.busy += 1
            return ChatReply(request_id=f"busy-{self.busy}", status=429, text="", body='{"error": "server_busy"}',
                             finish_reason=None, completion_tokens=None)
        return await super().ask(client, req, stage)


def test_a_busy_answer_beside_other_requests_is_asked_again(dataset: Dataset, tmp_path: Path) -> None:
    """Two at a time against a one-slot server: the busy answers are asked again, the evidence is the one-at-a-time
    evidence, and the probe passes (a server's admission limit is not a refusal of audio)."""
    one = _probe(dataset, tmp_path / "w1", 1)
    host = _OneSlot(dataset)
    anyio.run(lambda: capability_probe(host, "http://unused", tmp_path / "w2", in_flight=2))  # type: ignore[arg-type]
    assert host.busy > 0
    checks = [[(e.check, e.passed, e.reason) for e in h.bus.events if isinstance(e, CapabilityProbed)]
              for h in (one, host)]
    assert checks[0] == checks[1] and all(c[1] for c in checks[1])
    [done] = [e for e in host.bus.events if isinstance(e, PhaseFinished)]
    assert done.outcome == "passed"
