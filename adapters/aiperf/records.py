"""AIPerf per-request lines (profile_export.jsonl and the live tap's files) -> ClientRecord events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from orchestrator.base.columns import float_column, int_column
from orchestrator.events import ClientRecord
from orchestrator.spine.ports import ClientColumns

__all__ = [
    "parse_export_line", "decode_export_record", "decode_export_columns", "parse_tap_line", "server_timing_ms", "timing_header_ms",
    "header", "status_of", "ExportMetadata", "ExportError", "RecordParseError",
]


class RecordParseError(ValueError):
    """A line that is not a valid AIPerf record (names the source and what is wrong)."""


_UNIT_TO_MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "s": 1e3, "sec": 1e3}
_PHASES = {"warmup": "warmup", "profiling": "profiling"}


# The view Structs below mirror only the fields aqbench reads; they never leave this module. They are gc=False (no
# cycles; a block of them is dropped at once: bench/ingest.py).
class _Metric(msgspec.Struct, gc=False):
    value: float | None = None
    unit: str = "ms"


class _Metrics(msgspec.Struct, gc=False):
    request_latency: _Metric | None = None
    time_to_first_token: _Metric | None = None
    output_sequence_length: _Metric | None = None


class ExportMetadata(msgspec.Struct, gc=False):
    """`metadata` of an AIPerf record (shared with ingest's raw-export view)."""

    request_start_ns: int | None = None
    request_end_ns: int | None = None
    x_request_id: str | None = None
    x_correlation_id: str | None = None
    conversation_id: str | None = None
    session_num: int | None = None
    benchmark_phase: str | None = "unknown"
    phase_name: str | None = None  # the phase's own name (AIPerf's --config phases: one window each)
    credit_issued_ns: int | None = None
    request_ack_ns: int | None = None
    worker_id: str = ""
    was_cancelled: bool = False


class ExportError(msgspec.Struct, gc=False):
    """`error` of an AIPerf record: for HTTP errors `code` is the status and `message` the body."""

    message: str = ""
    code: int | None = None
    type: str | None = None
    cause: str | None = None

    def text(self) -> str:
        return f"{self.message} (cause: {self.cause})" if self.cause else self.message


class _Trace(msgspec.Struct, gc=False):
    response_status_code: int | None = None
    response_headers: dict[str, str] | None = None


class _ExportLine(msgspec.Struct, gc=False):
    metadata: ExportMetadata
    metrics: _Metrics = msgspec.field(default_factory=_Metrics)
    trace_data: _Trace | None = None
    error: ExportError | None = None


class _TapLine(msgspec.Struct):
    """What adapters.aiperf.observer writes: one line per record, flat."""

    request_id: str
    correlation_id: str = ""
    conversation_id: str = ""
    phase: str = ""
    phase_name: str = ""
    session_num: int | None = None
    worker_id: str = ""
    credit_issued_ns: int | None = None
    request_start_ns: int | None = None
    request_ack_ns: int | None = None
    request_end_ns: int | None = None
    status: int | None = None
    error: ExportError | None = None
    was_cancelled: bool = False
    request_latency_ms: float | None = None
    ttft_ms: float | None = None
    output_tokens: int | None = None
    text: str | None = None
    headers: dict[str, str] | None = None
    observed_ns: int | None = None


_export_decoder = msgspec.json.Decoder(_ExportLine)
_tap_decoder = msgspec.json.Decoder(_TapLine)


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


def timing_header_ms(value: str) -> float | None:
    """The `dur` of the `model` entry of a Server-Timing value (else of its first entry with a dur)."""
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


def server_timing_ms(headers: dict[str, str] | None) -> float | None:
    """The server's model time from a response's Server-Timing header, if it sent one."""
    value = header(headers, "server-timing")
    return timing_header_ms(value) if value else None


def status_of(trace_status: int | None, error: ExportError | None) -> int | None:
    """The HTTP status: the traced one, else the error's code."""
    if trace_status is not None:
        return trace_status
    return error.code if error is not None else None


def _ms(metric: _Metric | _UsualMetric | None) -> float | None:
    if metric is None or metric.value is None:
        return None
    return metric.value * _UNIT_TO_MS.get(metric.unit, 1.0)


def _phase(value: str | None) -> str:
    return _PHASES.get(value or "", "unknown")


def _window(window: str, windows: Mapping[str, str] | None, phase_name: str | None) -> str:
    """A phased run's record counts in its phase's window (the run's own window for a phase not named)."""
    return windows.get(phase_name or "", window) if windows else window


def _export_client(rec: _ExportLine, via: str, window: str, source: str, event_time: bool,
                   windows: Mapping[str, str] | None = None) -> ClientRecord:
    md = rec.metadata
    window = _window(window, windows, md.phase_name)
    if not md.x_request_id:
        raise RecordParseError("profile_export.jsonl: record without metadata.x_request_id: it cannot be joined")
    err, trace, metrics = rec.error, rec.trace_data, rec.metrics
    ttft, out = metrics.time_to_first_token, metrics.output_sequence_length
    # Ingest keeps the record's own time as the event time; live records are stamped by the bus.
    ts_ns = (md.request_end_ns or md.request_start_ns or 0) if event_time else 0
    if err is None and trace is None and ttft is None and md.request_ack_ns is None and not md.was_cancelled:
        # The common record without an HTTP trace: passing only fields that differ from their defaults
        # makes the Struct build 3-5x cheaper (msgspec's keyword matching grows with the keywords).
        return ClientRecord(
            ts_ns=ts_ns, source=source, request_id=md.x_request_id, via=via, aiperf_run=window,  # type: ignore[arg-type]
            correlation_id=md.x_correlation_id or "", conversation_id=md.conversation_id or "",
            phase=_phase(md.benchmark_phase), session_num=md.session_num, worker_id=md.worker_id,  # type: ignore[arg-type]
            credit_issued_ns=md.credit_issued_ns, request_start_ns=md.request_start_ns,
            request_end_ns=md.request_end_ns, request_latency_ms=_ms(metrics.request_latency),
            output_tokens=int(out.value) if out is not None and out.value is not None else None,
        )
    headers = trace.response_headers if trace is not None else None
    return ClientRecord(
        ts_ns=ts_ns, source=source, request_id=md.x_request_id, via=via, aiperf_run=window,  # type: ignore[arg-type]
        correlation_id=md.x_correlation_id or "", conversation_id=md.conversation_id or "",
        phase=_phase(md.benchmark_phase), session_num=md.session_num, worker_id=md.worker_id,  # type: ignore[arg-type]
        credit_issued_ns=md.credit_issued_ns, request_start_ns=md.request_start_ns,
        request_ack_ns=md.request_ack_ns, request_end_ns=md.request_end_ns,
        status_code=status_of(trace.response_status_code if trace is not None else None, err),
        error_code=err.code if err is not None else None, error_type=(err.type or "") if err is not None else "",
        error_message=err.text() if err is not None else "", was_cancelled=md.was_cancelled,
        request_latency_ms=_ms(metrics.request_latency), ttft_ms=_ms(ttft),
        output_tokens=int(out.value) if out is not None and out.value is not None else None,
        server_timing_ms=server_timing_ms(headers) if headers else None,
        echoed_request_id=header(headers, "x-request-id") if headers else "",
    )


def decode_export_record(line: bytes, *, via: str = "export", window: str = "", source: str = "aiperf:export",
                         event_time: bool = False, windows: Mapping[str, str] | None = None) -> ClientRecord:
    """One profile_export.jsonl line -> ClientRecord: the one decoder of AIPerf's per-request export,
    used live (via="export") and by ingest (via="ingest", event_time=True). `windows`: a phased run's
    phase name -> window. Raises msgspec errors for a malformed line and RecordParseError for a record
    that cannot be joined."""
    return _export_client(_export_decoder.decode(line), via, window, source, event_time, windows)


class _BlockMetadata(msgspec.Struct, gc=False):
    x_request_id: str | None = None
    request_start_ns: int | None = None
    request_end_ns: int | None = None
    benchmark_phase: str | None = "unknown"
    was_cancelled: bool = False


class _BlockMetrics(msgspec.Struct, gc=False):
    request_latency: _Metric | None = None


class _BlockTrace(msgspec.Struct, gc=False):
    response_status_code: int | None = None


class _BlockLine(msgspec.Struct, gc=False):
    """The fields ingest's summary reads, typed as _ExportLine types them; the others are skipped unchecked
    (less than half the cost of the whole view: bench/ingest.py)."""

    metadata: _BlockMetadata
    metrics: _BlockMetrics = msgspec.field(default_factory=_BlockMetrics)
    trace_data: _BlockTrace | None = None
    error: ExportError | None = None


class _UsualMetric(msgspec.Struct, gc=False):
    value: float | None = None
    unit: Literal["ms"] = "ms"


class _UsualMetadata(msgspec.Struct, gc=False):
    x_request_id: str | None = None
    request_start_ns: int | None = None
    request_end_ns: int | None = None
    benchmark_phase: Literal["warmup", "profiling"] | None = "unknown"  # type: ignore[assignment]  # as _BlockMetadata
    was_cancelled: bool = False


class _UsualMetrics(msgspec.Struct, gc=False):
    request_latency: _UsualMetric | None = None


class _UsualLine(msgspec.Struct, gc=False):
    """_BlockLine where the latency is in ms and the phase one of AIPerf's two (every line AIPerf 0.13.0 writes):
    the unit and phase are the interned Literal values, not a new string per line (bench/ingest.py)."""

    metadata: _UsualMetadata
    metrics: _UsualMetrics = msgspec.field(default_factory=_UsualMetrics)
    trace_data: _BlockTrace | None = None
    error: ExportError | None = None


_block_decoder = msgspec.json.Decoder(_BlockLine)
_usual_decoder = msgspec.json.Decoder(_UsualLine)


def _block_client(r: _BlockLine | _UsualLine, via: str) -> ClientRecord:
    """A row that is not plainly ok, with the fields the join and the summary read, as _export_client gives them."""
    md, err = r.metadata, r.error
    return ClientRecord(
        ts_ns=md.request_end_ns or md.request_start_ns or 0, request_id=md.x_request_id, via=via,  # type: ignore[arg-type]
        phase=_phase(md.benchmark_phase), request_start_ns=md.request_start_ns,  # type: ignore[arg-type]
        request_end_ns=md.request_end_ns,
        status_code=status_of(r.trace_data.response_status_code if r.trace_data is not None else None, err),
        error_code=err.code if err is not None else None, error_type=(err.type or "") if err is not None else "",
        error_message=err.text() if err is not None else "", was_cancelled=md.was_cancelled,
        request_latency_ms=_ms(r.metrics.request_latency),
    )


def decode_export_columns(block: bytes | memoryview, *, via: str) -> ClientColumns:
    """Whole profile_export.jsonl lines as columns, valued as decode_export_record(event_time=True) values
    each line; a row that is not plainly ok keeps its record in `odd`. Raises msgspec errors or
    RecordParseError where a line is not JSON, a field read here has the wrong type or the request id is
    missing (the caller then reads the block line by line to name it), OverflowError for an integer beyond
    int64. A field not read here is not checked."""
    try:
        rows: Sequence[_UsualLine | _BlockLine] = _usual_decoder.decode_lines(block)
        in_ms = True  # the usual view's unit is "ms" or nothing
    except msgspec.ValidationError:  # another unit or phase (or a bad line: then this raises too)
        rows, in_ms = _block_decoder.decode_lines(block), False
    # List comprehensions: their attribute loads are specialized for a Struct's slots (twice map(attrgetter)'s
    # pace); `metadata` is taken once for its five fields.
    meta = [r.metadata for r in rows]
    ids = [m.x_request_id for m in meta]
    if not all(ids):
        raise RecordParseError("profile_export.jsonl: record without metadata.x_request_id: it cannot be joined")
    try:  # the usual view: ms by its type, one step a row (AttributeError: a line without the latency)
        latency_ms = float_column([r.metrics.request_latency.value for r in rows]) if in_ms else None  # type: ignore[union-attr]
    except AttributeError:
        latency_ms = None
    if latency_ms is None:
        latency = [r.metrics.request_latency for r in rows]
        if None not in latency and {m.unit for m in latency} == {"ms"}:  # type: ignore[union-attr]
            latency_ms = float_column([m.value for m in latency])  # type: ignore[union-attr]
        else:
            latency_ms = float_column([_ms(m) for m in latency])
    # Not plainly ok: an error, a cancellation or an HTTP status of 400 or more (category_of's non-ok cases).
    odd = {i: _block_client(r, via) for i, r in enumerate(rows)
           if r.error is not None or r.metadata.was_cancelled
           or (r.trace_data is not None and (r.trace_data.response_status_code or 0) >= 400)}
    phases = [m.benchmark_phase for m in meta]
    # A block of one phase (most are) is checked by one count, not a set of every row's phase.
    one_phase = bool(phases) and phases[0] in _PHASE_SET and phases.count(phases[0]) == len(phases)
    return ClientColumns(
        request_id=ids,  # type: ignore[arg-type]  # all set: checked above
        phase=phases if one_phase or set(phases) <= _PHASE_SET else [_PHASES.get(p or "", "unknown") for p in phases],  # type: ignore[arg-type]
        request_start_ns=int_column([m.request_start_ns for m in meta]),
        request_end_ns=int_column([m.request_end_ns for m in meta]),
        request_latency_ms=latency_ms,
        odd=odd,
    )


_PHASE_SET = frozenset(_PHASES)


def parse_export_line(line: bytes, *, window: str = "", windows: Mapping[str, str] | None = None) -> ClientRecord:
    """One profile_export.jsonl line -> ClientRecord(via="export"). Raises RecordParseError."""
    try:
        return decode_export_record(line, window=window, windows=windows)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RecordParseError(f"profile_export.jsonl: {exc}: {line[:120]!r}") from None


def _error_text(err: ExportError | None) -> str:
    return err.text() if err is not None else ""


def parse_tap_line(line: bytes, *, window: str = "", windows: Mapping[str, str] | None = None) -> ClientRecord:
    """One live-tap line -> ClientRecord(via="tap"); `windows` as parse_export_line's. Raises RecordParseError."""
    try:
        rec = _tap_decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise RecordParseError(f"live tap: {exc}: {line[:120]!r}") from None
    err = rec.error
    return ClientRecord(
        source="aiperf:tap", request_id=rec.request_id, via="tap", aiperf_run=_window(window, windows, rec.phase_name),
        correlation_id=rec.correlation_id, conversation_id=rec.conversation_id,
        phase=_phase(rec.phase), session_num=rec.session_num, worker_id=rec.worker_id,  # type: ignore[arg-type]
        credit_issued_ns=rec.credit_issued_ns, request_start_ns=rec.request_start_ns,
        request_ack_ns=rec.request_ack_ns, request_end_ns=rec.request_end_ns,
        status_code=rec.status if rec.status is not None else (err.code if err else None),
        error_code=err.code if err else None, error_type=(err.type or "") if err else "",
        error_message=_error_text(err), was_cancelled=rec.was_cancelled,
        request_latency_ms=rec.request_latency_ms, ttft_ms=rec.ttft_ms, output_tokens=rec.output_tokens,
        answer=rec.text, server_timing_ms=server_timing_ms(rec.headers),
        echoed_request_id=header(rec.headers, "x-request-id"),
    )
