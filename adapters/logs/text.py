"""Plain-text lines -> OtelLog records: the line is the body, kept whole; a leading timestamp and a
level word are picked up when present. Never fails: undecodable bytes are replaced, not dropped."""

from __future__ import annotations

import re
import time

from adapters.logs.formats import LineFormat
from adapters.logs.otel import OtelLog, severity_number
from adapters.logs.timestamps import leading_timestamp

__all__ = ["TEXT", "decode_text"]

_LEVEL = re.compile(
    r"\b(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|PANIC)\b", re.IGNORECASE)
# key=value, key: value, and a JSON object's "request_id": "..." (trtmc-server logs its records as
# 'INFO:     {"event":"http_request","request_id":...}').
_REQUEST_ID = re.compile(r"\b(?:request[_-]?id|x-request-id)\"?[=: ]+\"?([A-Za-z0-9][A-Za-z0-9._:/-]{0,127})",
                         re.IGNORECASE)


def decode_text(line: bytes, observed_ns: int | None = None) -> OtelLog:
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    head = text[:120]
    level_match = _LEVEL.search(head)
    level = level_match.group(1).upper() if level_match else ""
    rid = _REQUEST_ID.search(text)
    return OtelLog(
        timestamp_unix_ns=leading_timestamp(head),
        observed_timestamp_unix_ns=observed_ns or time.time_ns(),
        severity_text=level,
        severity_number=severity_number(level),
        body=text,
        resource={"aqbench.log_format": "text"},
        attributes={"request_id": rid.group(1)} if rid else {},
    )


TEXT = LineFormat("text", "logs", decode_text)
