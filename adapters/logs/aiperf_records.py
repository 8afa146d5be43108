"""AIPerf 0.13.0 `profile_export.jsonl` lines -> ClientRecord(via="ingest").

View Structs name only the fields we use; msgspec skips the rest (metric lists, http timing) without
building them. The views never leave this module.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from adapters.logs.formats import LineFormat
from orchestrator.events import ClientRecord

__all__ = [
    "AIPERF_RECORDS", "decode_aiperf_record", "server_timing_ms", "header", "status_of", "Metadata", "ErrorView",
]

_UNIT_TO_MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "s": 1e3, "sec": 1e3}
_PHASES = {"warmup": "warmup", "profiling": "profiling"}


class _Metric(msgspec.Struct):
    value: float | None = None
    unit: str = "ms"


class _Metrics(msgspec.Struct):
    request_latency: _Metric | None = None
    time_to_first_token: _Metric | None = None
    output_sequence_length: _Metric | None = None


class Metadata(msgspec.Struct):
    """`metadata` of an AIPerf record (shared with the raw export view)."""

    request_start_ns: int | None = None
    request_end_ns: int | None = None
    x_request_id: str | None = None
    x_correlation_id: str | None = None
    conversation_id: str | None = None
    session_num: int | None = None
    benchmark_phase: str = "unknown"
    credit_issued_ns: int | None = None
    request_ack_ns: int | None = None
    worker_id: str = ""
    was_cancelled: bool = False


class ErrorView(msgspec.Struct):
    """`error` of an AIPerf record: for HTTP errors `code` is the status and `message` the body."""

    message: str = ""
    code: int | None = None
    type: str | None = None
    cause: str | None = None

    def text(self) -> str:
        """The message as the live export tailer (adapters.aiperf.records) words it."""
        return f"{self.message} (cause: {self.cause})" if self.cause else self.message


class _Trace(msgspec.Struct):
    response_status_code: int | None = None
    response_headers: dict[str, str] | None = None


class _Record(msgspec.Struct):
    metadata: Metadata
    metrics: _Metrics = msgspec.field(default_factory=_Metrics)
    trace_data: _Trace | None = None
    error: ErrorView | None = None


def header(headers: dict[str, str] | None, name: str) -> str:
    """A response header by lower-case name, whatever case the client stored it in."""
    if not headers:
        return ""
    value = headers.get(name)
    if value is not None:
        return value
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return ""


def server_timing_ms(value: str) -> float | None:
    """The `dur` of the `model` entry of a Server-Timing header (else of its first entry with a dur)."""
    first: float | None = None
    for entry in value.split(","):
        name, _, params = entry.strip().partition(";")
        for param in params.split(";"):
            key, _, dur = param.strip().partition("=")
            if key == "dur":
                try:
                    ms = float(dur)
                except ValueError:
                    break
                if name.strip() == "model":
                    return ms
                if first is None:
                    first = ms
    return first


def _ms(metric: _Metric | None) -> float | None:
    if metric is None or metric.value is None:
        return None
    return metric.value * _UNIT_TO_MS.get(metric.unit, 1.0)


def status_of(trace_status: int | None, error: ErrorView | None) -> int | None:
    """The HTTP status: the traced one, else the error's code (as the live export tailer does)."""
    if trace_status is not None:
        return trace_status
    return error.code if error is not None else None


def _client(rec: _Record) -> ClientRecord:
    md = rec.metadata
    if not md.x_request_id:
        raise ValueError("AIPerf record without metadata.x_request_id: it cannot be joined")
    err = rec.error
    trace = rec.trace_data
    metrics = rec.metrics
    ttft = metrics.time_to_first_token
    out = metrics.output_sequence_length
    if err is None and trace is None and ttft is None and md.request_ack_ns is None and not md.was_cancelled:
        # The common record: passing only the fields that differ from their defaults makes the
        # Struct build 3-5x cheaper (msgspec's keyword matching grows with the keywords given).
        return ClientRecord(
            ts_ns=md.request_end_ns or md.request_start_ns or 0,
            request_id=md.x_request_id,
            via="ingest",
            correlation_id=md.x_correlation_id or "",
            conversation_id=md.conversation_id or "",
            phase=_PHASES.get(md.benchmark_phase, "unknown"),  # type: ignore[arg-type]
            session_num=md.session_num,
            worker_id=md.worker_id,
            credit_issued_ns=md.credit_issued_ns,
            request_start_ns=md.request_start_ns,
            request_end_ns=md.request_end_ns,
            request_latency_ms=_ms(metrics.request_latency),
            output_tokens=int(out.value) if out is not None and out.value is not None else None,
        )
    headers = trace.response_headers if trace is not None else None
    timing = header(headers, "server-timing") if headers else ""
    return ClientRecord(
        ts_ns=md.request_end_ns or md.request_start_ns or 0,
        request_id=md.x_request_id,
        via="ingest",
        correlation_id=md.x_correlation_id or "",
        conversation_id=md.conversation_id or "",
        phase=_PHASES.get(md.benchmark_phase, "unknown"),  # type: ignore[arg-type]
        session_num=md.session_num,
        worker_id=md.worker_id,
        credit_issued_ns=md.credit_issued_ns,
        request_start_ns=md.request_start_ns,
        request_ack_ns=md.request_ack_ns,
        request_end_ns=md.request_end_ns,
        status_code=status_of(trace.response_status_code if trace is not None else None, err),
        error_code=err.code if err is not None else None,
        error_type=(err.type or "") if err is not None else "",
        error_message=err.text() if err is not None else "",
        was_cancelled=md.was_cancelled,
        request_latency_ms=_ms(metrics.request_latency),
        ttft_ms=_ms(ttft),
        output_tokens=int(out.value) if out is not None and out.value is not None else None,
        server_timing_ms=server_timing_ms(timing) if timing else None,
        echoed_request_id=header(headers, "x-request-id") if headers else "",
    )


_line = msgspec.json.Decoder(_Record)


def decode_aiperf_record(line: bytes) -> ClientRecord:
    """One `profile_export.jsonl` line as a ClientRecord; raises msgspec errors on a bad line."""
    return _client(_line.decode(line))


AIPERF_RECORDS = LineFormat("aiperf_records", "records", decode_aiperf_record)
