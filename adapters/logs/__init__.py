"""Parsers of the log and record formats `aqbench ingest` reads, one module per format, plus format
detection and the OpenTelemetry log model. Views of foreign formats never leave their module."""

from adapters.logs.aiperf_raw import AIPERF_RAW, decode_aiperf_raw
from adapters.logs.aiperf_records import AIPERF_RECORDS, decode_aiperf_record
from adapters.logs.detect import (
    FORMATS,
    SERVER_RECORDS,
    file_format,
    hint_from_name,
    is_known_name,
    sniff,
    sniff_fields,
)
from adapters.logs.formats import FORMAT_NAMES, FormatName, LineFormat
from adapters.logs.journal import JOURNAL, decode_journal_line
from adapters.logs.otel import OtelLog, from_log_line, severity_number, to_log_line
from adapters.logs.structured import GENERIC_JSON, STRUCTLOG, UVICORN
from adapters.logs.text import TEXT, decode_text
from adapters.logs.timestamps import leading_timestamp, parse_timestamp

__all__ = [
    "FORMATS", "FORMAT_NAMES", "FormatName", "LineFormat", "file_format", "hint_from_name", "is_known_name",
    "sniff", "sniff_fields",
    "JOURNAL", "AIPERF_RECORDS", "AIPERF_RAW", "SERVER_RECORDS", "STRUCTLOG", "UVICORN", "GENERIC_JSON", "TEXT",
    "decode_journal_line", "decode_aiperf_record", "decode_aiperf_raw", "decode_text",
    "OtelLog", "severity_number", "to_log_line", "from_log_line", "parse_timestamp", "leading_timestamp",
]
