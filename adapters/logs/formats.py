"""What a log format is to ingest: a name, a kind, a per-line decoder and, for the two big record formats, a
block decoder into columns (no event per line). Decoders raise, never return a partial result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LineFormat", "FormatName", "FORMAT_NAMES"]

FormatName = Literal[
    "journal", "aiperf_records", "aiperf_raw", "server_records", "structlog", "uvicorn", "json", "text"
]
FORMAT_NAMES: tuple[str, ...] = FormatName.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
# Decoders raise msgspec.DecodeError (not JSON), msgspec.ValidationError or ValueError (JSON of the wrong
# shape); they never return a partial result. Per-line calls: decoding many lines as one JSON array was
# measured slower in bench/ingest.py, so there is no batch decoder.
class LineFormat:
    """One format. `kind` is "records" (a bad line is an error to count) or "logs" (non-JSON lines of a
    log file are kept as text lines)."""

    name: FormatName
    kind: Literal["records", "logs"]
    decode_line: Callable[[bytes], Any]  # each format's own record type (records, OtelLog, events)
    decode_block: Callable[[bytes | memoryview], Any] | None = None
