"""AIPerf per-request lines (profile_export.jsonl and the live tap's files) -> ClientRecord events.

The view Structs below mirror only the fields aqbench reads; they never leave this module.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from orchestrator.events import ClientRecord

__all__ = ["parse_export_line", "parse_tap_line", "server_timing_ms", "RecordParseError"]


class RecordParseError(ValueError):
    """A line that is not a valid AIPerf record (names the source and what is wrong)."""


class _Metadata(msgspec.Struct):
    x_request_id: str | None = None
    x_correlation_id: str | None = None
    conversation_id: str | None = None
    session_num: int | None = None
    benchmark_phase: str | None = None
    worker_id: str = ""
    credit_issued_ns: int | None = None
    request_start_ns: int | None = None
    request_ack_ns: int | None = None
    request_end_ns: int | None = None
    was_cancelled: bool = False


class _Metric(msgspec.Struct):
    value: Any = None
    unit: str = ""


class _Trace(msgspec.Struct):
    response_status_code: int | None = None
    response_headers: dict[str, str] | None = None


class _Error(msgspec.Struct):
    code: int | None = None
    type: str | None = None
    message: str = ""
    cause: str | None = None


class _ExportLine(msgspec.Struct):
    metadata: _Metadata
    metrics: dict[str, _Metric] = {}
    trace_data: _Trace | None = None
    error: _Error | None = None


class _TapLine(msgspec.Struct):
    """What adapters.aiperf.observer writes: one line per record, flat."""

    request_id: str
    correlation_id: str = ""
    conversation_id: str = ""
    phase: str = ""
    session_num: int | None = None
    worker_id: str = ""
    credit_issued_ns: int | None = None
    request_start_ns: int | None = None
    request_ack_ns: int | None = None
    request_end_ns: int | None = None
    status: int | None = None
    error: _Error | None = None
    was_cancelled: bool = False
    request_latency_ms: float | None = None
    ttft_ms: float | None = None
    output_tokens: int | None = None
    text: str | None = None
    headers: dict[str, str] | None = None
    observed_ns: int | None = None


_export_decoder = msgspec.json.Decoder(_ExportLine)
_tap_decoder = msgspec.json.Decoder(_TapLine)
_DUR = re.compile(r"(?:^|[,\s])model\s*;[^,]*?\bdur=([0-9.]+)")


def server_timing_ms(headers: dict[str, str] | None) -> float | None:
    """`Server-Timing: model;dur=12.5` -> 12.5 (header name matched case-insensitively)."""
    value = _header(headers, "server-timing")
    if not value:
        return None
    match = _DUR.search(value)
    return float(match.group(1)) if match else None


def _header(headers: dict[str, str] | None, name: str) -> str:
    if not headers:
        return ""
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return ""


def _phase(value: str | None) -> str:
    return value if value in ("warmup", "profiling") else "unknown"


def _number(metrics: dict[str, _Metric], tag: str) -> float | None:
    metric = metrics.get(tag)
    if metric is None or not isinstance(metric.value, (int, float)):
        return None
    return float(metric.value)


def parse_export_line(line: bytes, *, window: str = "") -> ClientRecord:
    """One profile_export.jsonl line -> ClientRecord(via="export"). Raises RecordParseError."""
    try:
        rec = _export_decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise RecordParseError(f"profile_export.jsonl: {exc}: {line[:120]!r}") from None
    md = rec.metadata
    if not md.x_request_id:
        raise RecordParseError(f"profile_export.jsonl: record without metadata.x_request_id: {line[:120]!r}")
    headers = rec.trace_data.response_headers if rec.trace_data else None
    status = rec.trace_data.response_status_code if rec.trace_data else None
    err = rec.error
    osl = _number(rec.metrics, "output_sequence_length")
    return ClientRecord(
        source="aiperf:export", request_id=md.x_request_id, via="export", window=window,
        correlation_id=md.x_correlation_id or "", conversation_id=md.conversation_id or "",
        phase=_phase(md.benchmark_phase), session_num=md.session_num, worker_id=md.worker_id,  # type: ignore[arg-type]
        credit_issued_ns=md.credit_issued_ns, request_start_ns=md.request_start_ns,
        request_ack_ns=md.request_ack_ns, request_end_ns=md.request_end_ns,
        status_code=status if status is not None else (err.code if err else None),
        error_code=err.code if err else None, error_type=(err.type or "") if err else "",
        error_message=_error_text(err), was_cancelled=md.was_cancelled,
        request_latency_ms=_number(rec.metrics, "request_latency"),
        ttft_ms=_number(rec.metrics, "time_to_first_token"),
        output_tokens=int(osl) if osl is not None else None,
        server_timing_ms=server_timing_ms(headers), echoed_request_id=_header(headers, "x-request-id"),
    )


def _error_text(err: _Error | None) -> str:
    if err is None:
        return ""
    return f"{err.message} (cause: {err.cause})" if err.cause else err.message


def parse_tap_line(line: bytes, *, window: str = "") -> ClientRecord:
    """One live-tap line -> ClientRecord(via="tap"). Raises RecordParseError."""
    try:
        rec = _tap_decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise RecordParseError(f"live tap: {exc}: {line[:120]!r}") from None
    err = rec.error
    return ClientRecord(
        source="aiperf:tap", request_id=rec.request_id, via="tap", window=window,
        correlation_id=rec.correlation_id, conversation_id=rec.conversation_id,
        phase=_phase(rec.phase), session_num=rec.session_num, worker_id=rec.worker_id,  # type: ignore[arg-type]
        credit_issued_ns=rec.credit_issued_ns, request_start_ns=rec.request_start_ns,
        request_ack_ns=rec.request_ack_ns, request_end_ns=rec.request_end_ns,
        status_code=rec.status if rec.status is not None else (err.code if err else None),
        error_code=err.code if err else None, error_type=(err.type or "") if err else "",
        error_message=_error_text(err), was_cancelled=rec.was_cancelled,
        request_latency_ms=rec.request_latency_ms, ttft_ms=rec.ttft_ms, output_tokens=rec.output_tokens,
        answer=rec.text, server_timing_ms=server_timing_ms(rec.headers),
        echoed_request_id=_header(rec.headers, "x-request-id"),
    )
