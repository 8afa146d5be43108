"""Follows the server's `--records` files live -> ServerRecord events, one file per incarnation.

The tailer learns each incarnation's file from ServerSpawned.records_path; it never reads other events.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from anyio.abc import TaskGroup, TaskStatus

from adapters.fswatch import FolderWatch
from adapters.tail import LineFollower
from adapters.trtmc.records import ServerRecordParseError, parse_server_record
from orchestrator.events import ServerSpawned, Warned
from orchestrator.spine.ports import EventBus

__all__ = ["ServerRecordsTailer"]


class ServerRecordsTailer:
    """Follows every incarnation's records file and publishes its lines as ServerRecord events.

    Start with `await tg.start(tailer.run)` before the supervisor spawns the server. The task that
    reads the subscription never publishes (followers do), so this lossless subscriber cannot block
    the bus on itself. Cancellation stops following; lines not yet read are left in the files.
    A follower reads when the file's folder reports a change (or every `poll_s` without notification).
    """

    def __init__(self, bus: EventBus, *, poll_s: float = 0.01, name: str = "server-records") -> None:
        self._bus = bus
        self._poll_s = poll_s
        self._name = name
        self._tg: TaskGroup | None = None
        self._followed: set[str] = set()
        self.published = 0
        self.bad_lines = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with (anyio.create_task_group() as tg,
                    self._bus.subscribe(self._name, size=1024, kinds=(ServerSpawned,)) as sub):
            self._tg = tg
            task_status.started()
            async for ev in sub:
                if isinstance(ev, ServerSpawned) and ev.records_path:
                    self.follow(Path(ev.records_path), ev.incarnation)
            tg.cancel_scope.cancel()  # the bus closed: nothing read from now on could be published

    def follow(self, path: Path, incarnation: int) -> None:
        """Start following `path` (once) as the records of `incarnation`. Does not block."""
        if self._tg is None:
            raise RuntimeError("ServerRecordsTailer.follow before run() started")
        if str(path) in self._followed:
            return
        self._followed.add(str(path))
        self._tg.start_soon(self._follow, path, incarnation)

    async def _follow(self, path: Path, incarnation: int) -> None:
        follower = LineFollower(path, poll_s=self._poll_s)
        # Created before the first read, so a line written after any read wakes the next wait.
        watch = FolderWatch(path.parent, prefix=path.name, poll_s=self._poll_s)
        try:
            while True:
                for line in follower.read_available():
                    try:
                        rec = parse_server_record(line, incarnation=incarnation)
                    except ServerRecordParseError as exc:
                        self.bad_lines += 1
                        await self._bus.publish(Warned(source=self._name, code="server_record_bad_line",
                                                       message=f"{path}: {exc}"))
                        continue
                    self.published += 1
                    await self._bus.publish(rec)
                await watch.wait()
        finally:
            watch.close()
            follower.close()
