"""AIPerf 0.13.0 raw export (`profile_export_raw.jsonl`, `--export-level raw`) -> ClientRecord."""

from __future__ import annotations

import msgspec

from adapters.aiperf.records import ExportError, ExportMetadata, header, status_of, timing_header_ms
from adapters.logs.formats import LineFormat
from orchestrator.events import ClientRecord

__all__ = ["AIPERF_RAW", "decode_aiperf_raw", "answer_of"]

_PHASES = {"warmup": "warmup", "profiling": "profiling"}


class _Packet(msgspec.Struct):
    name: str = ""
    value: str | None = None


class _Response(msgspec.Struct):
    perf_ns: int = 0
    text: str | None = None
    packets: list[_Packet] | None = None


# A raw line carries the full request payload (base64 audio included) which the view skips unparsed; it
# keeps status, response headers and response bodies, so the answer text is known here.
class _Raw(msgspec.Struct):
    metadata: ExportMetadata
    start_perf_ns: int | None = None
    status: int | None = None
    response_headers: dict[str, str] | None = None
    responses: list[_Response] = []
    error: ExportError | None = None


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message | None = None
    delta: _Message | None = None
    text: str | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice] = []


_completion = msgspec.json.Decoder(_Completion)


def _choice_text(body: str, *, stream: bool) -> str | None:
    try:
        comp = _completion.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not comp.choices:
        return None
    c = comp.choices[0]
    part = c.delta if stream else c.message
    if part is not None and part.content is not None:
        return part.content
    return c.text


def answer_of(responses: list[_Response]) -> str | None:
    """The answer text: `choices[0].message.content` of a JSON body, or the streamed deltas joined."""
    pieces: list[str] = []
    for resp in responses:
        if resp.text is not None:
            text = _choice_text(resp.text, stream=False)
            if text is not None:
                return text
        for packet in resp.packets or ():
            if packet.name == "data" and packet.value and packet.value != "[DONE]":
                text = _choice_text(packet.value, stream=True)
                if text:
                    pieces.append(text)
    return "".join(pieces) if pieces else None


# Latency follows AIPerf's own definition: last response perf_ns - start_perf_ns.
def _client(raw: _Raw) -> ClientRecord:
    md = raw.metadata
    if not md.x_request_id:
        raise ValueError("AIPerf raw record without metadata.x_request_id: it cannot be joined")
    err = raw.error
    headers = raw.response_headers
    timing = header(headers, "server-timing") if headers else ""
    latency = None
    if raw.responses and raw.start_perf_ns and err is None:
        latency = (raw.responses[-1].perf_ns - raw.start_perf_ns) / 1e6
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
        status_code=status_of(raw.status, err),
        error_code=err.code if err is not None else None,
        error_type=(err.type or "") if err is not None else "",
        error_message=err.text() if err is not None else "",
        was_cancelled=md.was_cancelled,
        request_latency_ms=latency,
        answer=answer_of(raw.responses),
        server_timing_ms=timing_header_ms(timing) if timing else None,
        echoed_request_id=header(headers, "x-request-id") if headers else "",
    )


_line = msgspec.json.Decoder(_Raw)


def decode_aiperf_raw(line: bytes) -> ClientRecord:
    """One raw-export line as a ClientRecord; raises msgspec errors on a bad line."""
    return _client(_line.decode(line))


AIPERF_RAW = LineFormat("aiperf_raw", "records", decode_aiperf_raw)
