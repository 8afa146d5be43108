"""AIPerf 0.13.0 `profile_export.jsonl` lines -> ClientRecord(via="ingest"), through the AIPerf adapter's
own decoder (adapters.aiperf.records), so live runs and ingest read AIPerf's export one way."""

from __future__ import annotations

from adapters.aiperf.records import decode_export_columns, decode_export_record
from adapters.logs.formats import LineFormat
from orchestrator.events import ClientRecord
from orchestrator.spine.ports import ClientColumns

__all__ = ["AIPERF_RECORDS", "decode_aiperf_record"]


def decode_aiperf_record(line: bytes) -> ClientRecord:
    """One `profile_export.jsonl` line as a ClientRecord(via="ingest") at the record's own time; raises
    msgspec errors or ValueError on a bad line. The decoder is the live tailer's: one implementation."""
    return decode_export_record(line, via="ingest", source="", event_time=True)


def decode_aiperf_columns(block: bytes | memoryview) -> ClientColumns:
    """Whole `profile_export.jsonl` lines as columns, valued as decode_aiperf_record values each line."""
    return decode_export_columns(block, via="ingest")


AIPERF_RECORDS = LineFormat("aiperf_records", "records", decode_aiperf_record, decode_aiperf_columns)
