"""A fake Ray cluster that runs the campaign driver's tasks in process, for the campaign driver and live tests."""

from __future__ import annotations

import io
import tarfile
import time
from collections import deque

from orchestrator.campaign.events import (
    AnyTaskMessage,
    JournalChunk,
    NodeFacts,
    TaskDone,
    TaskPlaced,
)
from orchestrator.campaign.ports import AttemptSpec, Delivery
from orchestrator.events import ModelResult, ResultRow, RunFinished, RunStarted
from orchestrator.spine.journal import encode_event


def _tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"log line\n"
        info = tarfile.TarInfo("aqbench.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def finished(model: str, status: str) -> list[AnyTaskMessage]:
    """What a task sends when qualify reaches `status`: placed, its journal, done."""
    lines = b"".join(encode_event(e) + b"\n" for e in (
        RunStarted(run_id="r", seq=1, ts_ns=time.time_ns(), command="qualify"),
        ModelResult(run_id="r", seq=2, ts_ns=time.time_ns(), model=model, status=status,
                    row=ResultRow(qualify_command=f"aqbench qualify --model {model}")),
        RunFinished(run_id="r", seq=3, ts_ns=time.time_ns(), status="failed", exit_code=1)))
    return [TaskPlaced(node_id="n1"), JournalChunk(lines=lines), TaskDone(exit_code=1, folder_tar=_tar())]


class FakeCluster:
    """Plays each (model, attempt)'s script: messages, then optionally an end (`node-lost`, `error`)."""

    address = "fake:1"

    def __init__(self, scripts: dict[tuple[str, int], tuple[list[AnyTaskMessage], str | None]],
                 *, hang: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.scripts = scripts
        self.hang = hang
        self.queues: dict[tuple[str, int], deque[Delivery]] = {}
        self.max_running = 0
        self.stopped: list[int] = []
        self.killed = 0

    def nodes(self) -> list[NodeFacts]:
        return [NodeFacts(node_id="n1", address="10.0.0.1", alive=False)]

    def submit(self, spec: AttemptSpec) -> None:
        msgs, end = self.scripts[(spec.model, spec.attempt)]
        q: deque[Delivery] = deque(Delivery(model=spec.model, attempt=spec.attempt, message=m) for m in msgs)
        if end:
            q.append(Delivery(model=spec.model, attempt=spec.attempt, ended=end, reason=f"{end} happened",  # type: ignore[arg-type]
                              node_id="n1"))
        self.queues[(spec.model, spec.attempt)] = q
        self.max_running = max(self.max_running, self.running())

    def running(self) -> int:
        return len(self.queues)

    def poll(self, timeout_s: float) -> list[Delivery]:
        out = []
        for key, q in list(self.queues.items()):
            if key[0] in self.hang and not self.killed:
                if q and q[0].message is not None and isinstance(q[0].message, TaskPlaced):
                    out.append(q.popleft())
                continue
            if q:
                out.append(q.popleft())
            if not q:
                del self.queues[key]
        return out

    def stop(self, signum: int) -> None:
        self.stopped.append(signum)

    def kill(self) -> None:
        self.killed += 1
        for (model, attempt), q in self.queues.items():
            q.clear()
            q.append(Delivery(model=model, attempt=attempt, ended="interrupted", reason="TaskCancelledError"))

    def close(self) -> None:
        pass


