"""What an ingest found: per-source counts, bad lines, and latency statistics of the joined requests."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter
from typing import Literal

import msgspec

from orchestrator.base.errors import AqbenchError
from orchestrator.events import (
    RequestCorrelated,
)
from orchestrator.judge.stats import Summary, summarize

__all__ = ["BadCause", "BadLineError", "BadLine", "SourceSummary", "IngestSummary", "TIMING_FIELDS", "latency_statistics"]

BadCause = Literal["invalid_json", "wrong_types", "torn_last_line"]


class BadLineError(AqbenchError):
    """`--strict` and a line that did not decode in its file's format (exit 2, names file:line)."""

    exit_code = 2


class BadLine(msgspec.Struct, frozen=True):
    """A line that could not be read as its file's format (nor as any other), kept for the listing."""

    path: str
    line: int
    cause: BadCause
    error: str
    text: str


class SourceSummary(msgspec.Struct, kw_only=True):
    """What one input gave: lines read, events per format, bad and blank lines, lines filtered out."""

    path: str
    format: str = ""
    lines: int = 0
    blank: int = 0
    bad: int = 0
    filtered: int = 0
    events: dict[str, int] = {}


class IngestSummary(msgspec.Struct, kw_only=True):
    """The answer of an ingest (printed as text, or as JSON with `--summary-json`)."""

    sources: list[SourceSummary]
    lines: int
    events: int
    bad_lines: int
    bad: list[BadLine]
    by_format: dict[str, int]
    severities: dict[str, int]
    client_records: int
    server_records: int
    duplicate_copies: int
    joined: int
    joined_ok: int
    causes: dict[str, int]
    unmatched: dict[str, dict[str, int]]
    latency_ms: dict[str, Summary]
    first_unix_ns: int | None
    last_unix_ns: int | None
    journal_correlated: int = 0
    journal_correlated_agreeing: int = 0
    filtered: int = 0


TIMING_FIELDS = ("request_latency_ms", "client_lifecycle_ms", "handler_ms", "model_call_ms", "worker_roundtrip_ms")


def latency_statistics(correlated: Iterable[RequestCorrelated]) -> dict[str, Summary]:
    """Client vs server latency over successful profiling requests: the population and fields of the
    live report's window timing (orchestrator.reports.fold), through the same `summarize`."""
    rows = [c for c in correlated if c.ok and c.phase == "profiling"]
    # map + attrgetter and a list without the Nones: C loops over up to a million rows.
    return {name: summarize([v for v in map(attrgetter(name), rows) if v is not None]) for name in TIMING_FIELDS}
