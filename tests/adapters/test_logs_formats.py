"""Format parsers of adapters.logs: each format decodes into the typed events / OTel records it names."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from adapters.aiperf.records import parse_export_line
from adapters.logs import (
    FORMATS,
    decode_aiperf_raw,
    decode_aiperf_record,
    decode_journal_line,
    decode_text,
    file_format,
    from_log_line,
    hint_from_name,
    is_known_name,
    parse_timestamp,
    severity_number,
    sniff,
    to_log_line,
)
from adapters.trtmc.records import decode_server_record
from orchestrator.events import ClientRecord, LogLine, RequestCorrelated, ServerRecord
from orchestrator.spine.journal import decode_event, encode_event

DATA = Path(__file__).resolve().parents[1] / "data"
AIPERF = DATA / "aiperf" / "profile_export.jsonl"
REFERENCE = DATA / "ingest" / "reference-records-1.jsonl"


class TestAiperfRecords:
    def test_real_export_matches_the_live_export_parser(self) -> None:
        """Every line of a real AIPerf export gives the same ClientRecord as the live tailer's parser."""
        lines = AIPERF.read_bytes().splitlines()
        assert lines
        for line in lines:
            ours = decode_aiperf_record(line)
            live = parse_export_line(line)
            assert isinstance(ours, ClientRecord) and ours.via == "ingest"
            assert msgspec.structs.replace(ours, via="export", source=live.source, ts_ns=0) == live

    def test_error_record_keeps_status_and_message(self) -> None:
        """An HTTP-error record carries its code as status and its body as the message."""
        line = (b'{"metadata":{"x_request_id":"r1","request_start_ns":5,"request_end_ns":5,'
                b'"benchmark_phase":"profiling","session_num":0,"worker_id":"w"},"metrics":{},'
                b'"error":{"code":429,"type":"Too Many Requests","message":"busy","cause":"x"}}')
        rec = decode_aiperf_record(line)
        assert (rec.status_code, rec.error_code, rec.error_message, rec.phase) == (429, 429, "busy (cause: x)",
                                                                                   "profiling")

    def test_server_timing_and_echoed_id_from_trace_headers(self) -> None:
        """With --export-http-trace the Server-Timing model duration and the echoed id are kept."""
        line = (b'{"metadata":{"x_request_id":"r2","request_start_ns":1,"request_end_ns":9},'
                b'"metrics":{"request_latency":{"value":0.5,"unit":"s"}},"trace_data":{"response_status_code":200,'
                b'"response_headers":{"Server-Timing":"db;dur=1, model;dur=12.5","X-Request-ID":"r2"}}}')
        rec = decode_aiperf_record(line)
        assert (rec.server_timing_ms, rec.echoed_request_id, rec.status_code) == (12.5, "r2", 200)
        assert rec.request_latency_ms == 500.0

    def test_record_without_request_id_is_rejected(self) -> None:
        """A record that cannot be joined is an error, not a silent empty id."""
        with pytest.raises(ValueError, match="without metadata.x_request_id"):
            decode_aiperf_record(b'{"metadata":{"request_start_ns":1},"metrics":{}}')


class TestAiperfRaw:
    def test_raw_line_gives_answer_status_and_latency(self) -> None:
        """A raw-export line yields the answer text, the status and AIPerf's perf_ns latency."""
        line = (b'{"metadata":{"x_request_id":"r3","request_start_ns":100,"request_end_ns":200,'
                b'"benchmark_phase":"profiling"},"start_perf_ns":1000000,"payload":{"messages":[{"role":"user",'
                b'"content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]},'
                b'"status":200,"response_headers":{"x-request-id":"r3","server-timing":"model;dur=7"},'
                b'"responses":[{"perf_ns":26000000,"text":"{\\"choices\\":[{\\"message\\":{\\"content\\":\\"three\\"}}]}"}]}')
        rec = decode_aiperf_raw(line)
        assert (rec.answer, rec.status_code, rec.request_latency_ms, rec.server_timing_ms) == ("three", 200, 25.0, 7.0)

    def test_streamed_raw_answer_joins_deltas(self) -> None:
        """SSE packets are joined into one answer."""
        line = (b'{"metadata":{"x_request_id":"r4"},"responses":[{"perf_ns":1,"packets":['
                b'{"name":"data","value":"{\\"choices\\":[{\\"delta\\":{\\"content\\":\\"tw\\"}}]}"}]},'
                b'{"perf_ns":2,"packets":[{"name":"data","value":"{\\"choices\\":[{\\"delta\\":{\\"content\\":\\"o\\"}}]}"},'
                b'{"name":"data","value":"[DONE]"}]}]}')
        assert decode_aiperf_raw(line).answer == "two"


class TestServerRecords:
    def test_real_reference_records_decode(self) -> None:
        """A real reference-server records file (nulls included) decodes line by line."""
        recs = [decode_server_record(line) for line in REFERENCE.read_bytes().splitlines()]
        assert [r.request_id for r in recs] == ["cap-audio-1", "cap-text-1", "cap-bad-1", "cap-audio-2"]
        assert recs[2].status == 400 and recs[2].error_code == "invalid_request" and recs[2].model == ""
        assert recs[0].audio and recs[0].audio.seconds and recs[0].audio.seconds > 3 and recs[0].model_call_ms > 0

    @pytest.mark.parametrize("path", [REFERENCE, DATA / "aiperf" / "server_records.jsonl"])
    def test_same_event_as_the_live_tailer_parser(self, path: Path) -> None:
        """With nulls (reference) or without (trtmc-shaped), a line gives parse_server_record's event."""
        from adapters.trtmc.records import parse_server_record

        for line in path.read_bytes().splitlines():
            assert decode_server_record(line) == parse_server_record(line, source="")

    def test_wrong_type_is_an_error(self) -> None:
        """A status that is not a number is rejected with the path of the field."""
        with pytest.raises(ValueError, match=r"got `str` - at `\$.status`"):
            decode_server_record(b'{"request_id":"a","status":"ok"}')


class TestJournal:
    def test_journal_line_decodes_as_the_journal_reader_does(self) -> None:
        """A journal line decodes to the same event as orchestrator.spine.journal.decode_event."""
        ev = RequestCorrelated(run_id="r", seq=3, ts_ns=9, source="correlator", request_id="x", ok=True)
        line = encode_event(ev)
        assert decode_journal_line(line) == decode_event(line) == ev


class TestLogs:
    def test_structlog_line_to_otel_and_back(self) -> None:
        """structlog keys map onto the OTel model and the LogLine keeps the whole object."""
        rec = FORMATS["structlog"].decode_line(
            b'{"event":"server_ready","timestamp":"2024-05-01T12:00:00.250Z","level":"warning",'
            b'"logger":"aqbench.run","x_request_id":"abc","port":8000}')
        assert rec.timestamp_unix_ns == 1714564800250000000
        assert (rec.severity_text, rec.severity_number, rec.body) == ("warning", 13, "server_ready")
        assert rec.resource["service.name"] == "aqbench.run" and rec.request_id == "abc"
        line = to_log_line(rec, stream="aqbench.log", source="ingest:x")
        assert isinstance(line, LogLine) and line.text == "server_ready" and line.fields["port"] == 8000
        assert from_log_line(line).severity_number == 13

    def test_uvicorn_access_line_gets_http_attributes(self) -> None:
        """uvicorn's request_line and status_code become OTel HTTP attributes."""
        rec = FORMATS["uvicorn"].decode_line(
            b'{"asctime":"2024-05-01 12:00:00,100","name":"uvicorn.access","levelname":"INFO",'
            b'"message":"127.0.0.1:5 - \\"POST /v1/chat/completions HTTP/1.1\\" 200",'
            b'"client_addr":"127.0.0.1:5","request_line":"POST /v1/chat/completions HTTP/1.1","status_code":200}')
        attrs = rec.attributes
        assert (attrs["http.request.method"], attrs["url.path"], attrs["http.response.status_code"],
                attrs["client.address"]) == ("POST", "/v1/chat/completions", 200, "127.0.0.1")
        assert rec.severity_number == 9 and rec.timestamp_unix_ns == 1714564800100000000

    def test_text_line_keeps_everything(self) -> None:
        """A plain line is kept whole, with its leading time, level word and request id."""
        rec = decode_text(b"2024-05-01 12:00:01,5 ERROR worker died request_id=req-9\n")
        assert rec.body == "2024-05-01 12:00:01,5 ERROR worker died request_id=req-9"
        assert (rec.severity_number, rec.request_id, rec.timestamp_unix_ns) == (17, "req-9", 1714564801500000000)
        assert decode_text(b"\xff\xfe odd bytes").body.endswith("odd bytes")
        # trtmc-server's request log record: JSON behind Uvicorn's level prefix.
        rec = decode_text(b'INFO:     {"event":"http_request","request_id":"aqb-7","status":200}')
        assert (rec.severity_text, rec.request_id) == ("INFO", "aqb-7")

    @pytest.mark.parametrize(("text", "number"), [("TRACE", 1), ("debug", 5), ("Info", 9), ("WARN", 13),
                                                   ("error", 17), ("critical", 21), ("fatal", 21), ("bogus", 0)])
    def test_severity_numbers_follow_the_otel_ranges(self, text: str, number: int) -> None:
        """Level words map to the first number of their OTel range; unknown is 0."""
        assert severity_number(text) == number

    @pytest.mark.parametrize(("value", "ns"), [
        ("2024-05-01T12:00:00Z", 1714564800000000000), ("2024-05-01T14:00:00.5+02:00", 1714564800500000000),
        (1714564800, 1714564800000000000), (1714564800.25, 1714564800250000000),
        (1714564800123, 1714564800123000000), (1714564800000000001, 1714564800000000001), ("nope", None)])
    def test_timestamps(self, value: object, ns: int | None) -> None:
        """ISO text and unix numbers in s/ms/ns all become unix ns."""
        assert parse_timestamp(value) == ns


class TestDetection:
    @pytest.mark.parametrize(("name", "fmt"), [
        ("events.jsonl", "journal"), ("profile_export.jsonl.gz", "aiperf_records"),
        ("profile_export_raw.jsonl.zst", "aiperf_raw"), ("records-3.jsonl", "server_records"),
        ("aqbench.log", "structlog"), ("server.log", None), ("notes.txt", None)])
    def test_name_hints(self, name: str, fmt: str | None) -> None:
        """File names suggest formats, compression suffixes aside."""
        assert hint_from_name(name) == fmt

    def test_folder_walk_names(self) -> None:
        """Only known names are picked up when walking a folder."""
        assert is_known_name("records-1.jsonl.gz") and is_known_name("app.log.1")
        assert not is_known_name("inputs.json") and not is_known_name("rows.jsonl")

    @pytest.mark.parametrize(("line", "fmt"), [
        (encode_event(ServerRecord(seq=1, request_id="a")), "journal"),
        (b'{"metadata":{"x_request_id":"a"},"metrics":{}}', "aiperf_records"),
        (b'{"metadata":{"x_request_id":"a"},"responses":[]}', "aiperf_raw"),
        (b'{"request_id":"a","handler_ms":1.0}', "server_records"),
        (b'{"event":"x","level":"info"}', "structlog"),
        (b'{"name":"uvicorn.error","message":"x"}', "uvicorn"),
        (b'{"msg":"x"}', "json"), (b"hello", "text"), (b'{"torn":', None)])
    def test_line_sniffing(self, line: bytes, fmt: str | None) -> None:
        """A line's keys say its format; an undecodable object is None."""
        assert sniff(line) == fmt

    def test_name_wins_over_inconclusive_first_line(self) -> None:
        """A torn first line in records-1.jsonl still makes it a records file."""
        assert file_format("records-1.jsonl", b'{"request_id":') == "server_records"
        assert file_format("whatever.log", b'{"request_id":"a","handler_ms":1}') == "server_records"
        assert file_format("x.log", b"plain") == "text"
