"""The OpenTelemetry log data model as a Struct, and the severity mapping every log parser shares.

Only the model and pure mappings live here; parsers fill it, ingest turns it into LogLine events.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec

from orchestrator.events import LogLine

__all__ = [
    "OtelLog", "severity_number", "find_request_id", "to_log_line", "from_log_line", "log_attributes",
    "REQUEST_ID_KEYS",
]

# OTel SeverityNumber ranges: TRACE 1-4, DEBUG 5-8, INFO 9-12, WARN 13-16, ERROR 17-20, FATAL 21-24;
# 0 is UNSPECIFIED. Each text maps to the first number of its range.
_SEVERITY: dict[str, int] = {
    "trace": 1, "debug": 5, "info": 9, "information": 9, "notice": 10, "warn": 13, "warning": 13,
    "error": 17, "err": 17, "exception": 17, "critical": 21, "fatal": 21, "crit": 21, "panic": 21,
    "alert": 22, "emerg": 23, "emergency": 23,
}

# Keys under which logs carry our request id (X-Request-ID), first match wins.
REQUEST_ID_KEYS = ("request_id", "x_request_id", "x-request-id", "requestId", "req_id")


# One foreign log line's fields as decoded: open JSON (any logger's keys and values); each key aqbench uses is
# checked where it is read.
LogFields: TypeAlias = dict[str, Any]

class OtelLog(msgspec.Struct, frozen=True, kw_only=True):
    """One log record in the OTel log model (field names follow the model, times in unix ns)."""

    timestamp_unix_ns: int | None = None
    observed_timestamp_unix_ns: int = 0
    severity_text: str = ""
    severity_number: int = 0
    body: Any = ""  # the OTel model's AnyValue: a string, number, list or map, as the log wrote it
    resource: dict[str, str] = {}
    attributes: LogFields = {}
    trace_id: str = ""
    span_id: str = ""

    @property
    def request_id(self) -> str:
        """Our request id (X-Request-ID) when the record carries one; attributes["request_id"]."""
        value = self.attributes.get("request_id", "")
        return value if isinstance(value, str) else ""


def severity_number(text: str) -> int:
    """OTel SeverityNumber for a level word (case-insensitive); 0 (unspecified) when unknown."""
    return _SEVERITY.get(text.lower(), 0) if text else 0


def find_request_id(fields: LogFields) -> str:
    for key in REQUEST_ID_KEYS:
        value = fields.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def log_attributes(fields: LogFields) -> LogFields:
    """`fields` with the request id also under "request_id" (copied only when it had another key)."""
    if "request_id" in fields:
        return fields
    rid = find_request_id(fields)
    return {**fields, "request_id": rid} if rid else fields


def to_log_line(rec: OtelLog, *, stream: str, source: str) -> LogLine:
    """The journal event for one log record: body as text, attributes as fields, level as text."""
    body = rec.body if isinstance(rec.body, str) else msgspec.json.encode(rec.body).decode()
    return LogLine(
        source=source,
        ts_ns=rec.timestamp_unix_ns or 0,
        stream=stream,
        text=body,
        fields=rec.attributes or None,
        level=rec.severity_text,
    )


def from_log_line(ev: LogLine) -> OtelLog:
    """The OTel view of a LogLine that came from a journal (supervisor output, earlier ingests)."""
    fields = ev.fields or {}
    level = ev.level or (str(fields.get("level", "")) if fields else "")
    return OtelLog(
        timestamp_unix_ns=ev.ts_ns or None,
        observed_timestamp_unix_ns=ev.ts_ns,
        severity_text=level,
        severity_number=severity_number(level),
        body=ev.text,
        resource={"service.name": ev.stream, "aqbench.source": ev.source},
        attributes=log_attributes(fields),
        trace_id=str(fields.get("trace_id", "")),
        span_id=str(fields.get("span_id", "")),
    )
