"""trtmc-server's `--records` JSON lines, in one place: the line the reference server writes (`RecordLine`,
`RecordWriter`) and the readers that turn a line into a ServerRecord event for live runs and ingest alike
(`parse_server_record`, `decode_server_record`), so a line means the same everywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import IO

import msgspec
import numpy as np

from orchestrator.base.columns import float_column, int_column
from orchestrator.events import AudioFacts, ServerRecord
from orchestrator.spine.ports import ServerColumns

__all__ = [
    "AudioInfo", "RecordLine", "RecordWriter",
    "ServerRecordParseError", "parse_server_record", "decode_server_record", "decode_server_columns",
    "incarnation_from_name",
]

class AudioInfo(msgspec.Struct, frozen=True, kw_only=True):
    format: str
    sample_rate_hz: int
    channels: int
    seconds: float
    bytes: int


# Field names follow trtmc-server's records, plus `audio`, `error_code`, `start_unix_ns`, `end_unix_ns` and the
# reference server's `fault_latency_ms`. `ts_ns` and `incarnation` are not in a line: the tailer or ingest
# sets them.
class RecordLine(msgspec.Struct, frozen=True, kw_only=True):
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
    fault_latency_ms: float = 0.0  # the reference server's injected latency on this request (0: none)


_encoder = msgspec.json.Encoder()


class RecordWriter:
    """Appends records to a JSON-lines file; a line is flushed as soon as it is written.

    Writes are synchronous on the event loop: one short line to the page cache, no fsync, and no
    await between encode and write keeps lines whole under concurrency.
    """

    def __init__(self, path: str | Path | None) -> None:
        self._file: IO[bytes] | None = open(path, "ab") if path else None  # noqa: SIM115  # open for the writer's life
        self._buf = bytearray()

    def write(self, record: RecordLine) -> None:
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
    audio: dict[str, object] | None = None  # loose on purpose: a field of another type is dropped, not an error
    error_code: str | None = None
    end_unix_ns: int | None = None
    fault_latency_ms: float | None = None


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
        incarnation=incarnation, audio=_audio_facts(v.audio), error_code=v.error_code or "",
        end_unix_ns=v.end_unix_ns, fault_latency_ms=v.fault_latency_ms or 0.0,
    )


def _audio_facts(audio: dict[str, object] | None) -> AudioFacts | None:
    """The `audio` object's well-typed fields (a field of another type is left out, not an error)."""
    if audio is None:
        return None
    kept = {k: v for k, v in audio.items()
            if k in _AUDIO_TYPES and isinstance(v, _AUDIO_TYPES[k]) and not isinstance(v, bool)}
    return msgspec.convert(kept, AudioFacts)


_AUDIO_TYPES: dict[str, type | tuple[type, ...]] = {"format": str, "sample_rate_hz": int, "channels": int,
                                                     "seconds": (int, float), "bytes": int}
_direct = msgspec.json.Decoder(ServerRecord)
_INCARNATION = re.compile(r"records-(\d+)\.jsonl")


def decode_server_record(line: bytes) -> ServerRecord:
    """One records line; raises ValueError / msgspec errors on a bad line (no `request_id` included).

    Fast path: a line whose fields are all present or absent (no nulls) decodes straight into the
    event, which gives what parse_server_record gives (tests check both on real files) at a third
    of the cost; any line that does not (nulls, bad lines) goes through parse_server_record."""
    try:
        return _direct.decode(line)
    except msgspec.DecodeError:  # ValidationError included
        return parse_server_record(line, source="")


class _BlockView(msgspec.Struct, gc=False):
    """The fields ingest's summary reads, typed as _View types them; the others are skipped unchecked (half
    the cost of the whole view: bench/ingest.py). gc=False: a block's views are dropped at once, no cycles."""

    request_id: str
    status: int | None = None
    handler_ms: float | None = None
    model_call_ms: float | None = None
    worker_roundtrip_ms: float | None = None
    error_code: str | None = None
    end_unix_ns: int | None = None


_block = msgspec.json.Decoder(_BlockView)


def decode_server_columns(block: bytes | memoryview) -> ServerColumns:
    """Whole records lines as columns, valued as decode_server_record values each line; raises msgspec
    errors where a line is not JSON or a field read here has the wrong type (the caller then reads the block
    line by line to name it), OverflowError for an integer beyond int64. A field not read here is not checked."""
    rows = _block.decode_lines(block)
    # List comprehensions: their attribute loads are specialized for a Struct's slots (twice map(attrgetter)'s
    # pace). A null status or error code reads as parse_server_record reads it (0, "").
    return ServerColumns(
        request_id=[r.request_id for r in rows],
        status=int_column([r.status for r in rows], absent=0),
        error_code=[r.error_code or "" for r in rows],
        times=np.array([float_column([r.handler_ms for r in rows]), float_column([r.model_call_ms for r in rows]),
                        float_column([r.worker_roundtrip_ms for r in rows])]),
        end_unix_ns=int_column([r.end_unix_ns for r in rows]),
    )


def incarnation_from_name(name: str) -> int:
    """The supervisor names each incarnation's file `records-<incarnation>.jsonl`; 0 otherwise."""
    match = _INCARNATION.search(name)
    return int(match.group(1)) if match else 0
