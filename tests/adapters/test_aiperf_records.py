"""Parsing real AIPerf 0.13.0 output lines (export and live tap) and server records into events."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from adapters.aiperf.records import RecordParseError, parse_export_line, parse_tap_line, server_timing_ms
from adapters.trtmc.records import RecordLine, ServerRecordParseError, decode_server_record, parse_server_record
from orchestrator.events import AudioFacts

DATA = Path(__file__).parent.parent / "data" / "aiperf"


class TestExportLines:
    def test_real_export_lines(self) -> None:
        """Every line of a real profile_export.jsonl parses; phases, status, errors and headers survive."""
        recs = [parse_export_line(line, window="w") for line in (DATA / "profile_export.jsonl").read_bytes().splitlines()]
        assert [r.phase for r in recs].count("warmup") == 2 and len(recs) == 10
        ok = [r for r in recs if r.status_code == 200]
        errors = [r for r in recs if r.status_code == 500]
        assert len(ok) == 8 and len(errors) == 2
        assert all(r.echoed_request_id == r.request_id and r.server_timing_ms for r in recs)
        assert all(r.request_latency_ms and r.request_latency_ms > r.server_timing_ms for r in ok)
        assert errors[0].error_code == 500 and "injected failure" in errors[0].error_message
        assert errors[0].request_end_ns == errors[0].request_start_ns  # AIPerf's error records
        assert all(r.conversation_id.endswith("|audio") and r.aiperf_run == "w" and r.via == "export" for r in recs)

    def test_bad_line_names_the_problem(self) -> None:
        """A line without metadata.x_request_id or not JSON is refused with the file named."""
        with pytest.raises(RecordParseError, match="profile_export.jsonl: record without metadata.x_request_id"):
            parse_export_line(b'{"metadata":{}}')
        with pytest.raises(RecordParseError, match="profile_export.jsonl: "):
            parse_export_line(b'{"metadata":')


class TestTapLines:
    def test_tap_line(self) -> None:
        """A tap line carries the answer and the server timing header."""
        line = (b'{"request_id":"r1","correlation_id":"c","conversation_id":"a.audio","phase":"warmup",'
                b'"session_num":0,"request_start_ns":1,"request_end_ns":5,"status":200,"error":null,'
                b'"text":"four","headers":{"X-Request-ID":"r1","Server-Timing":"model;dur=12.5"},'
                b'"request_latency_ms":20.0}')
        rec = parse_tap_line(line, window="w")
        assert (rec.via, rec.phase, rec.answer, rec.server_timing_ms, rec.echoed_request_id) == (
            "tap", "warmup", "four", 12.5, "r1")

    def test_server_timing_variants(self) -> None:
        """Server-Timing is found case-insensitively among several metrics."""
        assert server_timing_ms({"server-timing": "db;dur=1, model;desc=x;dur=7.25"}) == 7.25
        assert server_timing_ms({"Other": "x"}) is None


class TestServerRecords:
    def test_real_server_lines(self) -> None:
        """Real records lines (with nulls) parse, tagged with their incarnation."""
        recs = [parse_server_record(line, incarnation=2) for line in (DATA / "server_records.jsonl").read_bytes().splitlines()]
        assert len(recs) == 10 and all(r.incarnation == 2 and r.timing_scope == "public_task_call_wall" for r in recs)
        assert sorted(r.status for r in recs).count(500) == 2

    def test_nulls_and_bad_lines(self) -> None:
        """null fields become empty values; a line without request_id is refused."""
        rec = parse_server_record(b'{"request_id":"x","model":null,"error_code":null,"status":200,"audio":null}')
        assert (rec.model, rec.error_code, rec.audio) == ("", "", None)
        with pytest.raises(ServerRecordParseError, match="server records line"):
            parse_server_record(b'{"status":200}')

    def test_audio_fields_of_another_type_are_left_out(self) -> None:
        """The `audio` object's well-typed fields are kept (an int of seconds as seconds); a field of another
        type (bytes as a boolean, a rate as text) is left out rather than failing the record."""
        line = b'{"request_id":"x","status":200,"audio":{"format":"wav","seconds":3,"bytes":true,"sample_rate_hz":"16k"}}'
        for decode in (parse_server_record, decode_server_record):
            audio = decode(line).audio
            assert audio == AudioFacts(format="wav", seconds=3.0), decode

    def test_injected_latency_is_read_and_older_lines_still_parse(self) -> None:
        """A reference server's `fault_latency_ms` reaches the event on both decode paths; a line without it
        (trtmc-server, older reference records) and one with null read 0 (none injected)."""
        written = msgspec.json.encode(RecordLine(request_id="slow", route="/v1/chat/completions", model="m", replica="r0",
                                                 status=200, handler_ms=2100.0, admission_ms=0.1, model_call_ms=2050.0,
                                                 fault_latency_ms=2000.0))
        for decode in (parse_server_record, decode_server_record):
            assert decode(written).fault_latency_ms == 2000.0, decode
            assert decode(b'{"request_id":"old","status":200}').fault_latency_ms == 0.0, decode
            assert decode(b'{"request_id":"n","status":200,"fault_latency_ms":null}').fault_latency_ms == 0.0, decode
        assert all(r.fault_latency_ms == 0.0 for r in map(parse_server_record,
                                                           (DATA / "server_records.jsonl").read_bytes().splitlines()))
