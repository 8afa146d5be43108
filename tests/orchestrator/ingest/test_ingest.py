"""`aqbench ingest`: crafted files of every format and bad-line kind, real samples, and a finished run's folder."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import anyio
import msgspec
import numpy as np
import pytest
import zstandard

from adapters.aiperf.records import parse_export_line
from adapters.trtmc.records import parse_server_record
from orchestrator.base.errors import AqbenchError
from orchestrator.commands.ingest import register
from orchestrator.commands.log_codecs import log_codecs
from orchestrator.correlate import Correlator
from orchestrator.events import AiperfExited, AiperfStarted, ClientRecord, RequestCorrelated, ServerRecord
from orchestrator.ingest import Ingest, expand_inputs, new_joiner
from orchestrator.ingest.columns import sorted_hashes
from orchestrator.ingest.reader import line_ends
from orchestrator.reports.fold import build_report
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import JournalWriter, read_journal

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
T0 = 1_714_564_800_000_000_000


def _client_line(i: int, phase: str = "profiling") -> str:
    start = T0 + i * 10_000_000
    return json.dumps({
        "metadata": {"session_num": i, "x_request_id": f"r{i}", "conversation_id": f"item-{i}.audio",
                     "request_start_ns": start, "request_end_ns": start + 30_000_000, "worker_id": "w",
                     "record_processor_id": "p", "benchmark_phase": phase, "was_cancelled": False},
        "metrics": {"request_latency": {"value": 30.0 + i, "unit": "ms"}}, "error": None})


def _server_line(i: int) -> str:
    return json.dumps({"request_id": f"r{i}", "route": "/v1/chat/completions", "status": 200,
                       "handler_ms": 20.0 + i, "model_call_ms": 10.0 + i, "end_unix_ns": T0 + i * 10_000_000 + 25_000_000})


def main(argv: list[str]) -> int:
    """`aqbench ingest ...` through the command's own parser, errors mapped to exit codes as cli.main does."""
    import argparse

    parser = argparse.ArgumentParser(prog="aqbench")
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except AqbenchError as exc:
        print(f"aqbench: error: {exc}", file=sys.stderr)
        return exc.exit_code


def _ingest(*paths: str | Path, **kw: object) -> Ingest:
    ing = Ingest(new_joiner, log_codecs(), **kw)  # type: ignore[arg-type]
    for p in expand_inputs([str(p) for p in paths], known_name=log_codecs().is_known_name):
        ing.feed_path(p)
    return ing


class TestBadLines:
    def test_every_kind_of_bad_line_is_counted_listed_and_nothing_dropped(self, tmp_path: Path) -> None:
        """Invalid JSON, wrong types, blank and a torn last line are counted with file:line; the rest is read."""
        rec = tmp_path / "records-2.jsonl"
        rec.write_text(_server_line(0) + "\n{oops\n" + '{"request_id": "r1", "status": "ok"}\n\n'
                       + _server_line(2) + "\nKilled\n" + '{"request_id": "r3", "sta')
        summary = _ingest(rec).finish()
        src = summary.sources[0]
        assert (src.format, src.lines, src.bad, src.blank, src.events) == (
            "server_records", 7, 3, 1, {"server_record": 2, "log_line": 1})
        assert [(b.line, b.cause) for b in summary.bad] == [
            (2, "invalid_json"), (3, "wrong_types"), (7, "torn_last_line")]
        assert summary.by_format == {"server_records": 2, "text": 1}
        assert all(b.path == str(rec) for b in summary.bad)
        assert summary.unmatched == {"server": {"no_client_record": 2}}

    def test_strict_makes_a_bad_line_an_error_naming_file_and_line(self, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
        """--strict exits 2 and names the file and line of the first bad line."""
        rec = tmp_path / "records-1.jsonl"
        rec.write_text(_server_line(0) + "\n" + '{"request_id": 5}\n')
        assert main(["ingest", str(rec), "--fail-on-bad-line"]) == 2
        err = capsys.readouterr().err
        assert f"{rec}:2: wrong types (file format server_records)" in err
        assert main(["ingest", str(rec)]) == 0

    def test_log_file_keeps_non_json_lines_as_text(self, tmp_path: Path) -> None:
        """A JSON log with a traceback, uvicorn lines and a stray server record is read per line."""
        log = tmp_path / "server.log"
        log.write_text(
            '{"event":"started","timestamp":"2024-05-01T12:00:00Z","level":"info"}\n'
            "Traceback (most recent call last):\n"
            '  File "x.py", line 1\n'
            '{"name":"uvicorn.access","levelname":"INFO","message":"ok","request_line":"GET / HTTP/1.1","status_code":200}\n'
            + _server_line(7) + "\n"
            '{"event":"stopped","timestamp":"2024-05-01T12:00:09Z","level":"error"}\n')
        summary = _ingest(log).finish()
        assert summary.bad_lines == 0 and summary.lines == 6
        assert summary.by_format == {"structlog": 2, "text": 2, "uvicorn": 1, "server_records": 1}
        assert summary.severities == {"info": 2, "error": 1, "unspecified": 2}
        assert summary.server_records == 1
        assert summary.first_unix_ns == T0 and summary.last_unix_ns == T0 + 9 * 10**9


class TestInputs:
    def test_gzip_zstd_folder_and_globs(self, tmp_path: Path) -> None:
        """Compressed files read transparently; folders are walked for known names only."""
        run = tmp_path / "run"
        (run / "server").mkdir(parents=True)
        (run / "aiperf").mkdir()
        body = "".join(_server_line(i) + "\n" for i in range(5)).encode()
        (run / "server" / "records-1.jsonl.gz").write_bytes(gzip.compress(body))
        exp = "".join(_client_line(i) + "\n" for i in range(5)).encode()
        (run / "aiperf" / "profile_export.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(exp))
        (run / "aiperf" / "inputs.json").write_text("{}")
        summary = _ingest(run).finish()
        assert len(summary.sources) == 2
        assert summary.joined == summary.joined_ok == 5 and summary.bad_lines == 0
        assert summary.sources[1].events == {"server_record": 5}  # incarnation from the name below
        assert _ingest(str(run / "*" / "*.zst")).finish().client_records == 5
        with pytest.raises(Exception, match="is not a file, a folder or a glob"):
            expand_inputs([str(tmp_path / "nothing*.jsonl")], known_name=log_codecs().is_known_name)

    def test_stdin_and_output_files(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
        """`-` reads standard input; --out is a journal the reader replays; --parquet has one row per join."""
        lines = "".join(f"{_client_line(i)}\n{_server_line(i)}\n" for i in range(4)) + "plain words\n"
        out, table = tmp_path / "events.jsonl", tmp_path / "joined.parquet"
        piped = tmp_path / "stdin.txt"
        piped.write_text(lines)
        with piped.open() as stdin:
            monkeypatch.setattr(sys, "stdin", stdin)
            assert main(["ingest", "-", "--out", str(out), "--parquet", str(table), "--json"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["joined_ok"] == 4 and summary["by_format"]["text"] == 1
        events, torn = read_journal(out)
        assert torn is None
        kinds = [type(e).__name__ for e in events]
        assert kinds.count("ClientRecord") == 4 and kinds.count("ServerRecord") == 4
        assert kinds.count("RequestCorrelated") == 4 and kinds.count("LogLine") == 1
        assert all(e.source == "ingest:-" for e in events if isinstance(e, ClientRecord | ServerRecord))
        import pyarrow.parquet as pq

        rows = pq.read_table(table).to_pylist()
        assert sorted(r["request_id"] for r in rows) == ["r0", "r1", "r2", "r3"]
        assert {r["item_id"] for r in rows} == {"item-0", "item-1", "item-2", "item-3"}

    def test_line_blocks_hold_whole_lines_in_one_buffer_grown_for_a_long_line(self, tmp_path: Path) -> None:
        """Blocks end at newlines whatever the read size; a line longer than the buffer grows it; the unterminated
        last line comes last and alone; compressed input reads the same."""
        from orchestrator.ingest.inputs import line_blocks

        body = b"a\n" + b"x" * 40 + b"\nbb\n\ncc\n" + b"y" * 100 + b"\nlast"
        for name, data in (("p.jsonl", body), ("p.jsonl.gz", gzip.compress(body))):
            path = tmp_path / name
            path.write_bytes(data)
            blocks = [bytes(b) for b in line_blocks(str(path), 16)]
            assert b"".join(blocks) == body and blocks[-1] == b"last"
            assert all(b.endswith(b"\n") for b in blocks[:-1]) and max(map(len, blocks)) > 16
        (tmp_path / "empty").write_bytes(b"")
        assert list(line_blocks(str(tmp_path / "empty"), 16)) == []

    def test_since_until_filter_and_count(self, tmp_path: Path) -> None:
        """Events outside --since/--until are counted as filtered, not silently lost."""
        exp = tmp_path / "profile_export.jsonl"
        exp.write_text("".join(_client_line(i) + "\n" for i in range(10)))
        summary = _ingest(exp, since_ns=T0 + 3 * 10_000_000, until_ns=T0 + 7 * 10_000_000).finish()
        assert summary.client_records == 4 and summary.filtered == 4 + 2 and summary.sources[0].filtered == 6


class TestRealSamples:
    def test_real_aiperf_export_joins_its_server_records(self) -> None:
        """The real AIPerf export and the server records of the same run join one to one (2 injected 500s)."""
        summary = _ingest(DATA / "aiperf").finish()
        assert summary.bad_lines == 0
        assert summary.client_records == summary.server_records == summary.joined == 10
        assert summary.causes == {"ok": 8, "http_5xx": 2} and not summary.unmatched
        lines = (DATA / "aiperf" / "profile_export.jsonl").read_bytes().splitlines()
        records = [parse_export_line(line) for line in lines]
        prof = sorted(r.request_latency_ms for r in records
                      if r.phase == "profiling" and not r.error_code and r.request_latency_ms is not None)
        assert summary.latency_ms["request_latency_ms"].count == len(prof)
        assert summary.latency_ms["request_latency_ms"].max == prof[-1]

    def test_reference_records_and_log(self) -> None:
        """A real reference-server records file and its plain-text log ingest without bad lines."""
        summary = _ingest(DATA / "ingest").finish()
        assert summary.bad_lines == 0 and summary.server_records == 4
        assert summary.unmatched == {"server": {"no_client_record": 4}}
        assert summary.by_format["text"] >= 1


async def _live_run(run_dir: Path) -> None:
    """What a live run journals: records on the bus, joined by the real Correlator, written by the journal."""
    bus = Bus("live-1")
    async with anyio.create_task_group() as tg:
        await tg.start(JournalWriter(run_dir / "events.jsonl").run, bus)
        from orchestrator.dataset import parse_session_key

        correlator = Correlator(bus, key_parser=parse_session_key, match_timeout_s=0.5)
        await tg.start(correlator.run)
        await bus.publish(AiperfStarted(source="aiperf", window="w1", argv=["aiperf"], shell="aiperf",
                                        artifact_dir=str(run_dir / "aiperf")))
        for line in (DATA / "aiperf" / "profile_export.jsonl").read_bytes().splitlines():
            await bus.publish(parse_export_line(line, window="w1"))
        for line in (DATA / "aiperf" / "server_records.jsonl").read_bytes().splitlines():
            await bus.publish(parse_server_record(line, incarnation=1))
        await correlator.close_window("w1")
        await bus.publish(AiperfExited(source="aiperf", window="w1", returncode=0, classification="complete"))
        await bus.aclose()
        tg.cancel_scope.cancel()


class TestFinishedRun:
    @pytest.mark.anyio
    async def test_run_folder_gives_the_live_joins_and_report_statistics(self, tmp_path: Path) -> None:
        """Ingesting a finished run's folder (journal + raw files) reproduces the live joins and report timing."""
        run = tmp_path / "run"
        (run / "aiperf").mkdir(parents=True)
        (run / "server").mkdir()
        await _live_run(run)
        shutil.copy(DATA / "aiperf" / "profile_export.jsonl", run / "aiperf" / "profile_export.jsonl")
        shutil.copy(DATA / "aiperf" / "server_records.jsonl", run / "server" / "records-1.jsonl")
        live, torn = read_journal(run / "events.jsonl")
        assert torn is None
        live_joins = {e.request_id: (e.ok, e.cause, e.item_id, e.arm) for e in live if isinstance(e, RequestCorrelated)}
        assert len(live_joins) == 10
        timing = build_report(run / "events.jsonl").windows[0].timing

        for inputs in ([run], [run / "aiperf", run / "server"]):  # with and without the journal
            ing = _ingest(*inputs)
            summary = ing.finish()
            assert summary.bad_lines == 0
            assert {c.request_id: (c.ok, c.cause, c.item_id, c.arm) for c in ing.correlated} == live_joins
            for name in ("request_latency_ms", "handler_ms", "model_call_ms", "client_lifecycle_ms"):
                assert summary.latency_ms[name] == getattr(timing, name), name
        assert summary.duplicate_copies == 0
        with_journal = _ingest(run).finish()
        assert with_journal.duplicate_copies == 20  # the files repeat what the journal holds
        assert with_journal.journal_correlated == with_journal.journal_correlated_agreeing == 10
        assert msgspec.to_builtins(with_journal.latency_ms) == msgspec.to_builtins(summary.latency_ms)


class TestParquetExtra:
    def test_missing_pyarrow_names_the_extra(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without pyarrow, --parquet is a usage error that names the file and the extra to install."""
        monkeypatch.setitem(sys.modules, "pyarrow", None)
        monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
        from orchestrator.base.errors import UsageError
        from orchestrator.ingest import write_parquet

        with pytest.raises(UsageError, match=r"--parquet .*x\.parquet: .*pip install 'aqbench\[parquet\]'"):
            write_parquet([], str(tmp_path / "x.parquet"))


def _both(*paths: str | Path) -> tuple[dict[str, object], dict[str, object]]:
    """The summary of the same inputs through the Joiner (events kept) and through the column join."""
    kept = msgspec.to_builtins(_ingest(*paths).finish())
    cols = msgspec.to_builtins(_ingest(*paths, keep_events=False).finish())
    return kept, cols


class TestColumnJoin:
    def test_summary_only_ingest_gives_the_joiners_summary(self, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
        """Without kept events the column join gives the same summary, key order included, on errors,
        warmup, cancellations, latencies in ns or missing, lone halves of both kinds, bad and blank lines and
        several blocks."""
        import orchestrator.ingest.reader

        monkeypatch.setattr(orchestrator.ingest.reader, "_BLOCK", 1 << 14)  # many blocks from small files
        exp, rec = tmp_path / "profile_export.jsonl", tmp_path / "records-3.jsonl"
        lines = []
        for i in range(900):
            d = json.loads(_client_line(i, "warmup" if i < 40 else "profiling"))
            if i % 97 == 0:
                d["error"] = {"code": 429 if i % 2 else 503, "type": "HTTP", "message": "busy"}
            if i % 211 == 0:
                d["metadata"]["was_cancelled"] = True
            if i % 301 == 0:
                d["error"] = {"code": None, "type": "ClientConnectorError", "message": "Connection refused"}
            if i % 173 == 0:
                d["metrics"]["request_latency"] = {"value": 31.5e6 + i, "unit": "ns"}
            if i % 179 == 0:
                del d["metrics"]["request_latency"]
            lines.append(json.dumps(d))
        lines[500] = "{oops"
        exp.write_text("\n".join(lines[:890]) + "\n\n")
        servers = [json.loads(_server_line(i)) for i in range(5, 910)]
        for d in servers[::50]:
            d["error_code"] = "server_busy"
        rec.write_text("\n".join(json.dumps(d) for d in servers) + "\n")
        kept, cols = _both(rec, exp)
        assert cols == kept and list(cols["causes"]) == list(kept["causes"])  # type: ignore[call-overload]
        assert kept["bad_lines"] == 1 and kept["unmatched"] == {
            "client": {"no_server_record": 5}, "server": {"no_client_record": 21}}  # 500 is the bad line
        kept, cols = _both(exp, rec)  # the other order of arrival
        assert cols == kept and list(cols["causes"]) == list(kept["causes"])  # type: ignore[call-overload]

    @pytest.mark.parametrize("blank", ["", "  ", "\t", " " * 12])  # 12: the newlines 8 bytes or more apart
    def test_two_values_on_a_line_beside_a_blank_line_are_named(self, tmp_path: Path, blank: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """A line of two records and a blank (or whitespace) line in one block: as many values as lines, yet the
        two-value line is bad, named by its line, as the per-line way names it."""
        import orchestrator.ingest.reader

        monkeypatch.setattr(orchestrator.ingest.reader, "_BLOCK", 1 << 14)  # many blocks from small files
        exp, rec = tmp_path / "profile_export.jsonl", tmp_path / "records-1.jsonl"
        lines = [_client_line(i) for i in range(200)]
        lines[150:152] = [lines[150] + " " + lines[151], blank]
        exp.write_text("\n".join(lines) + "\n")
        rec.write_text("".join(_server_line(i) + "\n" for i in range(200)))
        kept, cols = _both(rec, exp)
        assert cols == kept and kept["bad_lines"] == 1
        assert [b["line"] for b in kept["bad"]] == [151]  # type: ignore[index, union-attr]

    @pytest.mark.parametrize("rid", ["r{:05d}", "r{}", "\u00e9{:04d}", "r\n{:03d}", "r{:03d}\n", "r{:04d}"])
    @pytest.mark.parametrize("collide", [False, True])
    def test_ids_of_one_width_or_not_give_the_joiners_summary(self, tmp_path: Path, rid: str, collide: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
        """Ids of one ASCII width are joined as rows of bytes, others (several widths, non-ASCII, a newline in
        an id, halves of two widths) as strings; servers in another order than clients; with every hash made equal the Joiner
        decides. The same summary each way."""
        import orchestrator.ingest.columns

        if collide:
            monkeypatch.setattr(orchestrator.ingest.columns, "_row_hash",
                                lambda rows: np.zeros(len(rows), np.int64))
        exp, rec = tmp_path / "profile_export.jsonl", tmp_path / "records-1.jsonl"
        clients = [json.loads(_client_line(i)) for i in range(300)]
        for i, d in enumerate(clients):
            d["metadata"]["x_request_id"] = rid.format(i)
        servers = [json.loads(_server_line(i)) for i in range(5, 310)]
        for d in servers:
            d["request_id"] = rid.format(int(d["request_id"][1:])) + ("\0" if rid == "r{:04d}" else "")
        exp.write_text("".join(json.dumps(d) + "\n" for d in clients))
        rec.write_text("".join(json.dumps(d) + "\n" for d in servers[::-1]))
        kept, cols = _both(rec, exp)
        assert cols == kept
        if rid == "r{:04d}":  # servers' ids one NUL longer (the same number of words): none match
            assert kept["joined_ok"] == 0 and kept["unmatched"] == {
                "client": {"no_server_record": 300}, "server": {"no_client_record": 305}}
        else:
            assert kept["joined_ok"] == 295 and kept["unmatched"] == {
                "client": {"no_server_record": 5}, "server": {"no_client_record": 10}}

    def test_repeated_ids_and_real_samples_give_the_joiners_summary(self, tmp_path: Path) -> None:
        """A file read twice, a stray record in a log and the real samples: the Joiner decides, same summary."""
        exp = tmp_path / "profile_export.jsonl"
        exp.write_text("".join(_client_line(i) + "\n" for i in range(30)))
        (tmp_path / "again").mkdir()
        again = tmp_path / "again" / "profile_export.jsonl"
        shutil.copy(exp, again)
        log = tmp_path / "server.log"
        log.write_text("starting\n" + _server_line(3) + "\n")
        for paths in ([exp, again], [exp, log], [DATA / "aiperf"], [DATA / "ingest"], [exp, tmp_path / "*.jsonl"]):
            kept, cols = _both(*paths)
            assert cols == kept, paths
        assert _both(exp, again)[1]["duplicate_copies"] == 30

    def test_a_journal_beside_its_files_gives_the_joiners_summary(self, tmp_path: Path) -> None:
        """A journal's records (here an earlier ingest's --out) hand the halves to the Joiner: same summary."""
        exp, rec = tmp_path / "profile_export.jsonl", tmp_path / "records-1.jsonl"
        exp.write_text("".join(_client_line(i) + "\n" for i in range(20)))
        rec.write_text("".join(_server_line(i) + "\n" for i in range(3, 25)))
        (tmp_path / "run").mkdir()
        journal = tmp_path / "run" / "events.jsonl"
        with journal.open("wb") as fh:
            _ingest(exp, rec, out=fh).finish()
        for paths in ([rec, journal, exp], [journal], [exp, rec, journal]):
            kept, cols = _both(*paths)
            assert cols == kept, paths
        assert kept["duplicate_copies"] == 42 and kept["joined"] == 20

    def test_no_correlated_list_without_kept_events(self, tmp_path: Path) -> None:
        """An Ingest that keeps no events refuses to hand out a correlated list instead of an empty one."""
        exp = tmp_path / "profile_export.jsonl"
        exp.write_text(_client_line(0) + "\n")
        ing = _ingest(exp, keep_events=False)
        ing.finish()
        with pytest.raises(RuntimeError, match="keeps no RequestCorrelated"):
            _ = ing.correlated


def test_line_ends_are_every_newline_of_a_block() -> None:
    """line_ends gives np.flatnonzero's positions on blocks of every length, lines long and short (two newlines
    in one 8-byte word), a newline at either end, none at all."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        size = int(rng.integers(1, 120))
        data = np.where(rng.random(size) < rng.choice([0.02, 0.1, 0.5]), 10,
                        rng.integers(0, 256, size)).astype(np.uint8)
        newlines = np.empty(size + int(rng.integers(0, 9)), np.bool_)[:size]  # a reused, longer buffer's slice
        assert np.array_equal(line_ends(data, newlines), np.flatnonzero(data == 10)), data.tobytes()


@pytest.mark.parametrize("spread", [48, 24, 12, 1])
def test_sorted_hashes_come_with_the_order_that_sorts_them(spread: int) -> None:
    """sorted_hashes' order sorts the hashes, whether their high parts all differ (one sort of keys carrying the
    row numbers) or some are alike, the low bits deciding, or equal (argsort): `spread` random high bits, 8 low."""
    rng = np.random.default_rng(spread)
    for n in (0, 1, 2, 3, 1000, 5000):
        high = rng.integers(0, 2**spread, n, dtype=np.uint64) << np.uint64(64 - spread)
        hashes = high | rng.integers(0, 2**8, n, dtype=np.uint64)
        order, ordered = sorted_hashes(hashes)
        assert np.array_equal(np.sort(order), np.arange(n)) and np.array_equal(ordered, hashes[order])
        assert np.array_equal(ordered, np.sort(hashes))


class TestSummarizeArray:
    def test_same_figures_as_summarize_on_skewed_tied_and_tiny_samples(self) -> None:
        """The column join's statistics equal judge.stats.summarize's to the last bit (NaN as an absent value)."""
        import numpy as np

        from orchestrator.ingest.columns import summarize_array
        from orchestrator.judge.stats import summarize

        rng = np.random.default_rng(7)
        samples = [rng.lognormal(3, 1, 1001), rng.integers(0, 4, 333).astype(float), np.array([2.5]),
                   np.array([1.0, 2.0]), rng.standard_normal(10_000) * 1e3, np.array([np.nan, 3.0, np.nan]),
                   np.array([np.nan]), np.round(rng.uniform(0, 100, 4097), 1)]
        for xs in samples:
            assert summarize_array(xs) == summarize(None if v != v else float(v) for v in xs.tolist())
