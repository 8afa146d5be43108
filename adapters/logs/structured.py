"""JSON log lines (structlog, uvicorn access logs, any other JSON object) -> OtelLog records."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from adapters.logs.formats import LineFormat
from adapters.logs.otel import LogFields, OtelLog, log_attributes, severity_number
from adapters.logs.sniff import LOG_FORMATS, sniff_fields
from adapters.logs.timestamps import parse_timestamp

__all__ = ["STRUCTLOG", "UVICORN", "GENERIC_JSON", "decode_object", "to_otel"]

_object = msgspec.json.Decoder(LogFields)
_TIME_KEYS = ("timestamp", "time", "asctime", "ts", "@timestamp", "created")
_LEVEL_KEYS = ("level", "levelname", "severity", "log.level", "lvl")
_BODY_KEYS = ("event", "message", "msg")


def decode_object(line: bytes) -> LogFields:
    return _object.decode(line)


def _first(fields: LogFields, keys: tuple[str, ...]) -> Any:  # noqa: ANN401  # a foreign log field
    for key in keys:
        if key in fields:
            return fields[key]
    return None


def _http_attributes(fields: LogFields) -> LogFields:
    """OTel HTTP semantic-convention names parsed from uvicorn's `request_line` and `status_code`."""
    extra: LogFields = {}
    line = fields.get("request_line")
    if isinstance(line, str):
        parts = line.split(" ")
        if len(parts) == 3:
            extra["http.request.method"], extra["url.path"], extra["network.protocol.version"] = (
                parts[0], parts[1], parts[2].removeprefix("HTTP/"))
    status = fields.get("status_code")
    if isinstance(status, int) or (isinstance(status, str) and status.isdigit()):
        extra["http.response.status_code"] = int(status)
    client = fields.get("client_addr")
    if isinstance(client, str):
        extra["client.address"] = client.rpartition(":")[0] or client
    return extra


# structlog: `event`, `timestamp` (ISO UTC), `level`, `logger` + bound context. uvicorn JSON access logs:
# `name`/`logger` "uvicorn.access", `levelname`, `message`, `client_addr`, `request_line`, `status_code`.
# Everything else that is a JSON object is kept as a generic JSON log.
def to_otel(fields: LogFields, fmt: str, observed_ns: int | None = None) -> OtelLog:
    """The OTel record of one decoded JSON log object of format `fmt`."""
    level = _first(fields, _LEVEL_KEYS)
    level = level if isinstance(level, str) else ""
    body_key = _body_key(fields)
    body = fields[body_key] if body_key else None
    # Attributes keep every other key, so body + attributes is the whole original object.
    attributes = {k: v for k, v in fields.items() if k != body_key} if body_key else dict(fields)
    if fmt == "uvicorn":
        attributes.update(_http_attributes(fields))
    logger = fields.get("logger") or fields.get("name") or fmt
    return OtelLog(
        timestamp_unix_ns=parse_timestamp(_first(fields, _TIME_KEYS)),
        observed_timestamp_unix_ns=observed_ns or time.time_ns(),
        severity_text=level,
        severity_number=severity_number(level),
        body=body if body is not None else fields,
        resource={"service.name": str(logger), "aqbench.log_format": fmt},
        attributes=log_attributes(attributes),
        trace_id=str(fields.get("trace_id", "")),
        span_id=str(fields.get("span_id", "")),
    )


def _body_key(fields: LogFields) -> str:
    for key in _BODY_KEYS:
        if key in fields:
            return key
    return ""


class NotALogLine(ValueError):
    """A JSON line of a JSON log file that is a record of another format (ingest decodes it as that)."""


def _format(fmt: str) -> LineFormat:
    # A JSON log file mixes loggers (structlog, uvicorn, others), so each object is sniffed on its own.
    def line(raw: bytes) -> OtelLog:
        fields = _object.decode(raw)
        name = sniff_fields(fields)
        if name not in LOG_FORMATS:
            raise NotALogLine(f"a {name} line, not a log line")
        return to_otel(fields, name)

    return LineFormat(fmt, "logs", line)  # type: ignore[arg-type]


STRUCTLOG = _format("structlog")
UVICORN = _format("uvicorn")
GENERIC_JSON = _format("json")
