"""The server's `--records` files -> ServerRecord events, one file per incarnation, followed live.

`parse_server_record` decodes one line through a tolerant view (nulls allowed) and is reused by ingest.
The tailer learns each incarnation's file from ServerSpawned.records_path; it never reads other events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from adapters.tail import LineFollower
from orchestrator.events import ServerRecord, ServerSpawned, Warned

__all__ = ["parse_server_record", "ServerRecordParseError", "ServerRecordsTailer"]


class ServerRecordParseError(ValueError):
    """A records line that is not one JSON object with a request_id."""


class _View(msgspec.Struct):
    request_id: str
    route: str | None = None
    model: str | None = None
    replica: str | None = None
    status: int | None = None
    handler_ms: float | None = None
    admission_ms: float | None = None
    model_call_ms: float | None = None
    timing_scope: str | None = None
    worker_roundtrip_ms: float | None = None
    setup_ms: float | None = None
    prefill_ms: float | None = None
    decode_ms: float | None = None
    completion_tokens: int | None = None
    streaming: str | None = None
    audio: dict[str, Any] | None = None
    error_code: str | None = None
    end_unix_ns: int | None = None


_decoder = msgspec.json.Decoder(_View)


def parse_server_record(line: bytes, *, incarnation: int = 0, source: str = "server-records") -> ServerRecord:
    """One `--records` line -> ServerRecord (ts_ns left 0 for the bus to stamp). Raises
    ServerRecordParseError naming what is wrong."""
    try:
        v = _decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise ServerRecordParseError(f"server records line: {exc}: {line[:120]!r}") from None
    return ServerRecord(
        source=source, request_id=v.request_id, route=v.route or "", model=v.model or "",
        replica=v.replica or "", status=v.status or 0, handler_ms=v.handler_ms, admission_ms=v.admission_ms,
        model_call_ms=v.model_call_ms, timing_scope=v.timing_scope or "",
        worker_roundtrip_ms=v.worker_roundtrip_ms, setup_ms=v.setup_ms, prefill_ms=v.prefill_ms,
        decode_ms=v.decode_ms, completion_tokens=v.completion_tokens, streaming=v.streaming or "",
        incarnation=incarnation, audio=v.audio, error_code=v.error_code or "", end_unix_ns=v.end_unix_ns,
    )


class ServerRecordsTailer:
    """Follows every incarnation's records file and publishes its lines as ServerRecord events.

    Start with `await tg.start(tailer.run)` before the supervisor spawns the server. The task that
    reads the subscription never publishes (followers do), so this lossless subscriber cannot block
    the bus on itself. Cancellation stops following; lines not yet read are left in the files.
    """

    def __init__(self, bus: Any, *, poll_s: float = 0.01, name: str = "server-records") -> None:
        self._bus = bus
        self._poll_s = poll_s
        self._name = name
        self._tg: TaskGroup | None = None
        self._followed: set[str] = set()
        self.published = 0
        self.bad_lines = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg, self._bus.subscribe(self._name, size=1024) as sub:
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
                await anyio.sleep(self._poll_s)
        finally:
            follower.close()
