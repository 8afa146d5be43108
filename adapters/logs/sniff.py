"""The format of one decoded JSON object, by its keys (no decoding here, no format registry)."""

from __future__ import annotations

from adapters.logs.formats import FormatName
from adapters.logs.otel import LogFields
from orchestrator.events import EVENT_TYPES

__all__ = ["sniff_fields", "LOG_FORMATS"]

_EVENT_TAGS = frozenset(cls.__struct_config__.tag for cls in EVENT_TYPES)
LOG_FORMATS = frozenset(("structlog", "uvicorn", "json"))


def sniff_fields(fields: LogFields) -> FormatName:
    """The format of one decoded JSON object, by its keys."""
    kind = fields.get("kind")
    if isinstance(kind, str) and kind in _EVENT_TAGS and "seq" in fields:
        return "journal"
    if isinstance(fields.get("metadata"), dict):
        if "metrics" in fields:
            return "aiperf_records"
        if "responses" in fields or "payload" in fields or "start_perf_ns" in fields:
            return "aiperf_raw"
    if "request_id" in fields and ("handler_ms" in fields or "model_call_ms" in fields
                                   or ("route" in fields and "status" in fields)):
        return "server_records"
    logger = fields.get("name") or fields.get("logger")
    if (isinstance(logger, str) and logger.startswith("uvicorn")) or (
            "request_line" in fields and "status_code" in fields):
        return "uvicorn"
    if "event" in fields and ("timestamp" in fields or "level" in fields):
        return "structlog"
    return "json"
