"""The --records file: one JSON line per chat request, appended after its response ends, flushed.

Field names follow trtmc-server's records, plus `audio`, `error_code`, `start_unix_ns`, `end_unix_ns`.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import msgspec

__all__ = ["AudioInfo", "ServerRecord", "RecordWriter"]


class AudioInfo(msgspec.Struct, frozen=True, kw_only=True):
    format: str
    sample_rate_hz: int
    channels: int
    seconds: float
    bytes: int


class ServerRecord(msgspec.Struct, frozen=True, kw_only=True):
    request_id: str
    route: str
    model: str | None
    replica: str | None
    status: int
    handler_ms: float
    admission_ms: float | None
    model_call_ms: float | None
    timing_scope: str = "public_task_call_wall"
    worker_roundtrip_ms: float | None = None
    completion_tokens: int | None = None
    input_tokens: None = None  # prompt tokens are never known, as in trtmc-server
    streaming: str = "none"
    audio: AudioInfo | None = None
    error_code: str | None = None
    start_unix_ns: int = 0
    end_unix_ns: int = 0


_encoder = msgspec.json.Encoder()


class RecordWriter:
    """Appends records to a JSON-lines file; a line is flushed as soon as it is written.

    Writes are synchronous on the event loop: one short line to the page cache, no fsync, and no
    await between encode and write keeps lines whole under concurrency.
    """

    def __init__(self, path: str | Path | None) -> None:
        self._file: IO[bytes] | None = open(path, "ab") if path else None  # noqa: SIM115
        self._buf = bytearray()

    def write(self, record: ServerRecord) -> None:
        if self._file is None:
            return
        _encoder.encode_into(record, self._buf)
        self._buf.extend(b"\n")
        self._file.write(self._buf)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
