"""`aqbench ingest` composition root: inputs -> format detection -> normalised events -> join -> summary.
Reads files (plain, gzip, zstd), folders and standard input; never blocks on the network."""

from __future__ import annotations

import gc
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from operator import attrgetter
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from orchestrator.base.columns import float_column, int_column
from orchestrator.events import (
    AccountingChecked,
    ClientRecord,
    Event,
    LogLine,
    RequestCorrelated,
    RequestsInFlight,
    RequestUnmatched,
    ServerRecord,
)
from orchestrator.ingest.columns import ColumnAnswer, ColumnJoin
from orchestrator.ingest.inputs import line_blocks, read_chunks
from orchestrator.ingest.summary import (
    BadCause,
    BadLine,
    BadLineError,
    IngestSummary,
    SourceSummary,
    latency_statistics,
)
from orchestrator.judge.accounting import category_of
from orchestrator.spine.ports import ClientColumns, LineDecoder, LogCodecs, ServerColumns

if TYPE_CHECKING:
    from orchestrator.correlate import Joiner
    from orchestrator.spine.redaction import Redactor

__all__ = ["Ingest", "new_joiner", "gc_paused"]

# Output is flushed in 256 KiB batches, the size of an input chunk.
_CHUNK = 1 << 18
_BLOCK = 1 << 20

_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError)
# Events the correlator derives: ingest derives them again from the halves, so copies read from a
# journal are counted (and compared), not re-emitted.
_DERIVED = (RequestCorrelated, RequestUnmatched, AccountingChecked, RequestsInFlight)
_replace = msgspec.structs.replace
# The record formats whose halves the column join keeps (their block decoders give columns).
_COLUMNAR = ("server_records", "aiperf_records")














# ----------------------------------------------------------------------------------------- inputs








# ------------------------------------------------------------------------------------------- core


def line_ends(data: npt.NDArray[np.uint8], newlines: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """The positions of the newlines in `data`, as np.flatnonzero(data == 10) gives them; `newlines` (as long as
    `data`) is overwritten. Found 8 bytes at a time where no two newlines share an 8-byte word (lines of 8 bytes
    or more, as records are): np.flatnonzero over every byte of a block took four times as long (bench/ingest.py)."""
    np.equal(data, 10, out=newlines)
    full = data.size - data.size % 8
    eights = newlines[:full].view("<u8")  # byte j of a word is its bits 8j..8j+7, on any platform
    words = np.flatnonzero(eights != 0)
    found = eights[words]
    if (found & (found - np.uint64(1))).any():  # a word with two newlines: byte by byte
        return np.flatnonzero(newlines)
    # One newline byte in a word: the word is 2**(8j), and frexp gives its exponent 8j + 1 exactly.
    ends: npt.NDArray[np.intp] = words * 8 + (np.frexp(found.astype(np.float64))[1] - 1) // 8
    if full < data.size:
        ends = np.concatenate((ends, np.flatnonzero(newlines[full:]) + full))
    return ends


def _is_json(line: bytes) -> bool:
    try:
        msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return True


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic GC while a chunk is decoded: ingest keeps every half until it is joined, and each
    collection would walk all of them (3x slower in bench/ingest.py). Decoding creates no cycles. Nests: only
    the outermost pause enables the GC again (the first collection after it walks what was made meanwhile)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()



class _File:
    """Per-input reading state: its format, line counter and the unterminated tail of the last chunk."""

    def __init__(self, path: str, summary: SourceSummary, incarnation: int) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.summary = summary
        self.format: LineDecoder | None = None
        self.lineno = 0
        self.pending = b""
        self.source = f"ingest:{path}"
        self.incarnation = incarnation


class Ingest:
    """Feeds lines of many inputs through detection, decoding and the join; `finish()` gives the answer.

    Not thread-safe; one instance per command. `joiner` makes the correlator's pure join core (`new_joiner`),
    called where a half first goes to it. With `keep_events=False` (and no `out`, no time window) the server
    records and AIPerf exports are joined over columns (orchestrator.ingest.columns), the same answer without one
    event per line, and `correlated` is not kept; a repeated request id or a journal's records hand every half to
    the joiner.
    """

    def __init__(
        self,
        joiner: Callable[[], Join],
        codecs: LogCodecs,
        *,
        since_ns: int | None = None,
        until_ns: int | None = None,
        strict: bool = False,
        keep_events: bool = True,
        out: BinaryIO | None = None,
        max_listed: int = 100,
    ) -> None:
        self._new_joiner = joiner
        self._joiner: Join | None = None
        self.codecs = codecs
        self.since_ns = since_ns
        self.until_ns = until_ns
        self.strict = strict
        self.out = out
        self.max_listed = max_listed
        self._files: dict[str, _File] = {}
        self._bad: list[BadLine] = []
        self._bad_total = 0
        self._severities: dict[str, int] = {}
        self._by_format: dict[str, int] = {}
        self._first: int | None = None
        self._last: int | None = None
        self._client_keys: set[tuple[str, int | None]] = set()
        self._server_keys: set[tuple[str, int, int | None, float | None]] = set()
        self._duplicates = 0
        self._clients = 0
        self._servers = 0
        self._correlated: list[RequestCorrelated] = []
        self._unmatched: list[RequestUnmatched] = []
        self._journal_correlated: dict[str, RequestCorrelated] = {}
        self._outbuf = bytearray()
        self._encoder = msgspec.json.Encoder()
        self._redactor: Redactor | None = None  # made with the first event written (`out`)
        self._cols: ColumnJoin | None = None
        self._newlines = np.empty(0, np.bool_)
        if not keep_events and out is None and since_ns is None and until_ns is None:
            self._cols = ColumnJoin()

    @property
    def joiner(self) -> Join:
        """The join core, made on first use: a summary the column join answers never needs it (nor the dataset
        package its key parser loads: bench/ingest.py measures the start)."""
        if self._joiner is None:
            self._joiner = self._new_joiner()
        return self._joiner

    # ---------------------------------------------------------------- feeding

    def _file(self, path: str) -> _File:
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = _File(path, SourceSummary(path=path),
                                          self.codecs.incarnation_from_name(os.path.basename(path)))
        return f

    def feed_path(self, path: str) -> None:
        """Read a whole file (or stdin); its last line may be unterminated."""
        f = self._file(path)
        # One pause for the whole file, not one per chunk: each re-enable would let a collection
        # walk every half still waiting for its other half (the records file is read before the
        # export, so that is all of them).
        with gc_paused():
            if self._cols is None:
                for chunk in read_chunks(path, _CHUNK):
                    self.feed(path, chunk)
            else:
                # Columns are decoded a block of whole lines at a time: 1 MiB pieces shrink per-block costs
                # (bench/ingest.py); the first block goes the per-line way, to detect the format.
                for block in line_blocks(path, _BLOCK):
                    if block[-1] != 10:  # the last line, without its newline
                        f.pending = bytes(block)
                    elif f.format is not None and f.format.decode_block is not None:
                        self._block(f, block)
                    else:
                        self.feed(path, bytes(block))
            self.end(f.path)

    def feed(self, path: str, chunk: bytes) -> None:
        """Bytes appended to `path`; complete lines are processed, the rest waits for more."""
        f = self._file(path)
        if self._cols is not None and f.format is not None and f.format.decode_block is not None:
            self._blocks(f, chunk)
            return
        # Split the chunk itself (no copy of the whole chunk): only the carried-over tail is joined.
        lines = chunk.split(b"\n")
        if f.pending:
            lines[0] = f.pending + lines[0]
        f.pending = lines.pop()
        if lines:
            self._lines(f, lines)

    def feed_lines(self, path: str, lines: list[bytes]) -> None:
        """Whole lines (without newlines) from a follower."""
        if not lines:
            return
        f = self._file(path)
        if self._cols is not None and f.format is not None and f.format.decode_block is not None:
            self._block(f, b"\n".join(lines) + b"\n")
        else:
            self._lines(f, lines)

    # Decoding is batched: a block of complete lines in one known format is decoded with one msgspec call (into
    # columns when no event is kept), and only when that fails is it retried line by line to find, classify and
    # count the bad lines.
    def _blocks(self, f: _File, chunk: bytes) -> None:
        """A chunk of a block-decoded file, decoded in place (a view, not a copy): the line the last chunk
        left unfinished is completed and decoded alone, then every whole line after it at once."""
        start = 0
        if f.pending:
            start = chunk.find(b"\n") + 1
            if not start:
                f.pending += chunk
                return
            head, f.pending = f.pending + chunk[:start], b""
            self._block(f, head)
        end = chunk.rfind(b"\n") + 1
        if end > start:
            self._block(f, memoryview(chunk)[start:end])
        f.pending = chunk[max(start, end):]

    def _block(self, f: _File, block: bytes | memoryview) -> None:
        """Complete lines of a file whose format decodes blocks into columns (ending in a newline each)."""
        fmt = f.format
        assert fmt is not None and fmt.decode_block is not None
        data = np.frombuffer(block, np.uint8)
        if self._newlines.size < data.size:
            self._newlines = np.empty(data.size, np.bool_)
        newlines = self._newlines[:data.size]  # reused: no 1 MiB allocation (and its page faults) per block
        ends = line_ends(data, newlines)
        n = ends.size
        # decode_lines reads whitespace-separated values, not lines: a blank line and a line of two values
        # would give as many rows as lines. A block where a line starts with whitespace (or is empty) goes the
        # per-line way; then equal counts mean one value a line.
        blank = data[0] <= 32 or bool((data[ends[:-1] + 1] <= 32).any())
        with gc_paused():
            try:
                cols = None if blank else fmt.decode_block(block)
            except (*_DECODE_ERRORS, OverflowError):  # an integer beyond a column's int64: the per-line path
                cols = None
            # Rows and lines differ (two values on one line, a bad line): the per-line path names them.
            if cols is not None and len(cols.request_id) == n and self._add_columns(f, fmt.name, cols):
                f.summary.lines += n
                f.lineno += n
                return
            self._lines(f, bytes(block).split(b"\n")[:-1])

    def end(self, path: str) -> None:
        """End of input for `path`: an unterminated last line is processed, and if it does not decode
        it is a torn last line."""
        f = self._file(path)
        if f.pending:
            tail, f.pending = f.pending, b""
            self._tail(f, tail)

    def restart(self, path: str) -> None:
        """The file was truncated or replaced (follow mode): line numbers start again at 1."""
        f = self._file(path)
        f.lineno = 0
        f.pending = b""

    def _lines(self, f: _File, lines: list[bytes]) -> None:
        """Complete lines, without their newlines."""
        n = len(lines)
        f.summary.lines += n
        if f.format is None:
            self._detect(f, lines)
        fmt = f.format
        assert fmt is not None
        start = f.lineno
        f.lineno += n
        with gc_paused():
            if fmt.kind == "records":
                # Fast path: every line decodes; the first that does not (a blank or bad line) sends
                # the whole run through the per-line path, which finds, classifies and counts it.
                decode = fmt.decode_line
                try:
                    items = [decode(line) for line in lines]
                except _DECODE_ERRORS:
                    pass
                else:
                    self._emit(f, fmt.name, items)
                    return
            for i, line in enumerate(lines, start + 1):
                self._one(f, fmt, line, i, torn=False)

    def _tail(self, f: _File, line: bytes) -> None:
        f.summary.lines += 1
        if f.format is None:
            self._detect(f, [line])
        f.lineno += 1
        assert f.format is not None
        self._one(f, f.format, line, f.lineno, torn=True)

    def _detect(self, f: _File, lines: list[bytes]) -> None:
        first = next((ln for ln in lines if ln.strip()), None)
        name = self.codecs.file_format(f.name, first)
        f.format = self.codecs.formats[name]
        f.summary.format = name

    def _one(self, f: _File, fmt: LineDecoder, line: bytes, lineno: int, *, torn: bool) -> None:
        if not line.strip():
            f.summary.blank += 1
            return
        first_error: Exception | None = None
        # A JSON object in a text file is decoded as what it is (per-line detection).
        if fmt.name != "text" or not line.lstrip().startswith(b"{"):
            try:
                item = fmt.decode_line(line)
            except _DECODE_ERRORS as exc:
                first_error = exc
            else:
                self._emit(f, fmt.name, [item])
                return
        # Per-line detection: a line of another format in this file (a traceback in a JSON log, a
        # server record in a log). Non-JSON lines are kept as text anywhere; a records file takes no
        # generic JSON objects (those are records of the wrong shape: bad lines).
        other = self.codecs.sniff(line)
        if other is not None and other != fmt.name and (fmt.kind == "logs" or other != "json"):
            try:
                item = self.codecs.formats[other].decode_line(line)
            except _DECODE_ERRORS as exc:
                first_error = first_error or exc
            else:
                self._emit(f, other, [item])
                return
        if torn:
            cause: BadCause = "torn_last_line"
        else:
            cause = "wrong_types" if _is_json(line) else "invalid_json"
        self._bad_line(f, lineno, cause, str(first_error or "not JSON"), line)

    def _bad_line(self, f: _File, lineno: int, cause: BadCause, error: str, line: bytes) -> None:
        f.summary.bad += 1
        self._bad_total += 1
        bad = BadLine(path=f.path, line=lineno, cause=cause, error=error,
                      text=line[:200].decode("utf-8", "replace"))
        if self.strict:
            raise BadLineError(
                f"{f.path}:{lineno}: {cause.replace('_', ' ')} (file format {f.summary.format}) ({error}); "
                f"line starts {bad.text[:80]!r}. Fix or remove the line, or run without --strict to "
                f"count and list bad lines and go on."
            )
        if len(self._bad) < self.max_listed:
            self._bad.append(bad)

    # ---------------------------------------------------------------- events

    def _in_window(self, ts: int | None) -> bool:
        if ts is None or ts == 0:
            return True  # untimed lines cannot be judged; they are kept
        if self.since_ns is not None and ts < self.since_ns:
            return False
        return self.until_ns is None or ts < self.until_ns

    def _span(self, ts: int) -> None:
        if ts:
            if self._first is None or ts < self._first:
                self._first = ts
            if self._last is None or ts > self._last:
                self._last = ts

    def _add_columns(self, f: _File, fmt: str, cols: ServerColumns | ClientColumns) -> bool:
        """Keep a block of halves in the column join; False, with nothing kept, when it cannot take them."""
        assert self._cols is not None
        times: tuple[int, int] | Literal[False] | None
        if isinstance(cols, ServerColumns):
            times, kind = self._cols.add_servers(cols, f.incarnation), "server_record"
        else:
            times, kind = self._cols.add_clients(cols), "client_record"
        if times is False:
            return False
        if times:
            self._span(times[0])
            self._span(times[1])
        self._count(f, fmt, kind, len(cols.request_id))
        return True

    def _columns(self, f: _File, fmt: str, items: list[Any]) -> bool:
        """Decoded records (the per-line path) into the column join; False when they cannot go there."""
        try:
            if fmt == "server_records":
                if any(r.incarnation for r in items):
                    return False  # a line that names its own incarnation: the Joiner's way
                return self._add_columns(f, fmt, ServerColumns(
                    request_id=[r.request_id for r in items], status=int_column([r.status for r in items]),
                    error_code=[r.error_code for r in items],
                    times=np.array([float_column([r.handler_ms for r in items]),
                                    float_column([r.model_call_ms for r in items]),
                                    float_column([r.worker_roundtrip_ms for r in items])]),
                    end_unix_ns=int_column([r.end_unix_ns for r in items])))
            return self._add_columns(f, fmt, ClientColumns(
                request_id=[r.request_id for r in items], phase=[r.phase for r in items],
                request_start_ns=int_column([r.request_start_ns for r in items]),
                request_end_ns=int_column([r.request_end_ns for r in items]),
                request_latency_ms=float_column([r.request_latency_ms for r in items]),
                odd={i: r for i, r in enumerate(items) if category_of(r) != "ok"}))
        except OverflowError:  # an integer beyond int64: the Joiner's way
            return False

    def _spill(self) -> None:
        """Hand every half the column join holds to the Joiner, in arrival order; columns end here."""
        cols, self._cols = self._cols, None
        assert cols is not None
        for servers, clients in cols.records():
            if servers:
                self._join_servers(servers, "")
            if clients:
                self._join_clients(clients, "")

    def _emit(self, f: _File, fmt: str, items: list[Any]) -> None:
        if self._cols is not None:
            if fmt in _COLUMNAR and self._columns(f, fmt, items):
                return
            if fmt in _COLUMNAR or not all(map(self.codecs.is_log, items)):
                self._spill()
        if fmt == "server_records" and len(items) > 1:
            self._emit_servers(f, items)
            return
        if fmt in ("aiperf_records", "aiperf_raw") and len(items) > 1:
            self._emit_clients(f, items)
            return
        events = f.summary.events
        by_format = self._by_format
        for item in items:
            name = fmt
            if isinstance(item, ServerRecord):
                ts = item.end_unix_ns or item.ts_ns
                if not self._in_window(ts):
                    f.summary.filtered += 1
                    continue
                if f.incarnation and not item.incarnation:
                    item = _replace(item, incarnation=f.incarnation)
                self._server(item, ts, f.source)
            elif isinstance(item, ClientRecord):
                ts = item.request_start_ns or item.ts_ns
                if not self._in_window(ts):
                    f.summary.filtered += 1
                    continue
                self._client(item, ts, f.source)
            elif self.codecs.is_log(item):
                ts = item.timestamp_unix_ns
                if not self._in_window(ts):
                    f.summary.filtered += 1
                    continue
                self._log(item, f, ts)
                name = item.resource.get("aqbench.log_format", fmt)
                item = LogLine  # for the per-kind count below
            else:
                if not self._in_window(item.ts_ns):
                    f.summary.filtered += 1
                    continue
                self._journal_event(item)
            kind = item.__struct_config__.tag if item is not LogLine else "log_line"
            events[kind] = events.get(kind, 0) + 1
            by_format[name] = by_format.get(name, 0) + 1

    def _windowed(self, f: _File, items: list[Any], ts_of: Callable[[Any], int | None]) -> list[Any]:
        if self.since_ns is None and self.until_ns is None:
            return items
        kept = [r for r in items if self._in_window(ts_of(r))]
        f.summary.filtered += len(items) - len(kept)
        return kept

    def _count(self, f: _File, fmt: str, kind: str, n: int) -> None:
        f.summary.events[kind] = f.summary.events.get(kind, 0) + n
        self._by_format[fmt] = self._by_format.get(fmt, 0) + n

    def _emit_servers(self, f: _File, items: list[ServerRecord]) -> None:
        """A run of one records file's lines: the same steps as `_server`, a list at a time."""
        items = self._windowed(f, items, lambda r: r.end_unix_ns or r.ts_ns)
        if f.incarnation:
            inc = f.incarnation
            items = [r if r.incarnation else _replace(r, incarnation=inc) for r in items]
        self._join_servers(items, f.source)
        self._count(f, "server_records", "server_record", len(items))

    def _join_servers(self, items: list[ServerRecord], source: str) -> None:
        keys = [(r.request_id, r.incarnation, r.end_unix_ns, r.handler_ms) for r in items]
        if len(set(keys)) != len(keys) or not self._server_keys.isdisjoint(keys):
            for r in items:
                self._server(r, r.end_unix_ns or r.ts_ns, source)
            return
        self._server_keys.update(keys)
        self._servers += len(items)
        ends = [r.end_unix_ns for r in items if r.end_unix_ns]
        if ends:
            self._span(min(ends))
            self._span(max(ends))
        if self.out is not None:
            for r in items:
                self._write(_replace(r, source=source, ts_ns=r.end_unix_ns or 0) if not r.source else r)
        produced = self.joiner.add_servers(items)
        if produced:
            self._derived(produced)

    def _emit_clients(self, f: _File, items: list[ClientRecord]) -> None:
        """A run of one AIPerf export's lines: the same steps as `_client`, a list at a time."""
        fmt = f.summary.format
        items = self._windowed(f, items, lambda r: r.request_start_ns or r.ts_ns)
        self._join_clients(items, f.source)
        self._count(f, fmt, "client_record", len(items))

    def _join_clients(self, items: list[ClientRecord], source: str) -> None:
        keys = [(r.request_id, r.request_start_ns) for r in items]
        if len(set(keys)) != len(keys) or not self._client_keys.isdisjoint(keys):
            for r in items:
                self._client(r, r.request_start_ns or r.ts_ns, source)
            return
        self._client_keys.update(keys)
        self._clients += len(items)
        starts = [r.request_start_ns for r in items if r.request_start_ns]
        ends = [r.request_end_ns for r in items if r.request_end_ns]
        for times in (starts, ends):
            if times:
                self._span(min(times))
                self._span(max(times))
        if self.out is not None:
            for r in items:
                self._write(_replace(r, source=source) if not r.source else r)
        produced = self.joiner.add_clients(items)
        if produced:
            self._derived(produced)

    def _server(self, rec: ServerRecord, ts: int | None, source: str) -> None:
        key = (rec.request_id, rec.incarnation, rec.end_unix_ns, rec.handler_ms)
        if key in self._server_keys:
            self._duplicates += 1  # the same record through two inputs (journal and records file)
            return
        self._server_keys.add(key)
        self._servers += 1
        if ts:
            self._span(ts)
        if self.out is not None:
            self._write(rec if rec.source else _replace(rec, source=source, ts_ns=rec.ts_ns or ts or 0))
        self._derived(self.joiner.add_server(rec))

    def _client(self, rec: ClientRecord, ts: int | None, source: str) -> None:
        key = (rec.request_id, rec.request_start_ns)
        if key in self._client_keys:
            self._duplicates += 1
            return
        self._client_keys.add(key)
        self._clients += 1
        if ts:
            self._span(ts)
            if rec.request_end_ns:
                self._span(rec.request_end_ns)
        if self.out is not None:
            self._write(rec if rec.source else _replace(rec, source=source))
        self._derived(self.joiner.add_client(rec))

    def _log(self, rec: Any, f: _File, ts: int | None) -> None:  # noqa: ANN401  # the log codec's record type
        level = self.codecs.severity(rec).lower() or "unspecified"
        self._severities[level] = self._severities.get(level, 0) + 1
        if ts:
            self._span(ts)
        if self.out is not None:
            self._write(self.codecs.to_log_line(rec, stream=f.name, source=f.source))

    def _journal_event(self, ev: Event) -> None:
        if isinstance(ev, ClientRecord):
            self._client(ev, ev.request_start_ns or ev.ts_ns, ev.source)
            return
        if isinstance(ev, ServerRecord):
            self._server(ev, ev.end_unix_ns or ev.ts_ns, ev.source)
            return
        self._span(ev.ts_ns)
        if isinstance(ev, LogLine):
            level = self.codecs.severity_of_line(ev).lower() or "unspecified"
            self._severities[level] = self._severities.get(level, 0) + 1
        if isinstance(ev, _DERIVED):
            if isinstance(ev, RequestCorrelated):
                self._journal_correlated[ev.request_id] = ev
            return
        if self.out is not None:
            self._write(ev)

    def _derived(self, produced: Any) -> None:  # noqa: ANN401  # a joiner's output: an event, a list or None
        if not produced:
            return
        if self.out is None and isinstance(produced, list):
            # The bulk path: mostly RequestCorrelated, kept without a call per event.
            correlated = self._correlated
            for ev in produced:
                if type(ev) is RequestCorrelated:
                    correlated.append(ev)
                else:
                    self._keep(ev)
            return
        for ev in produced if isinstance(produced, (list, tuple)) else (produced,):
            self._keep(ev)

    def _keep(self, ev: Event) -> None:
        if isinstance(ev, RequestCorrelated):
            self._correlated.append(ev)
        elif isinstance(ev, RequestUnmatched):
            self._unmatched.append(ev)
        if self.out is not None:
            self._write(ev)

    def _write(self, ev: Event) -> None:
        buf = self._outbuf
        if self._redactor is None:
            # The events.jsonl written here is a journal like a run's: credentials never reach it. Imported here:
            # only --out writes events (its patterns are compiled at import).
            from orchestrator.spine.redaction import Redactor

            self._redactor = Redactor.from_environ()
        self._encoder.encode_into(self._redactor.event(ev), buf, -1)
        buf.extend(b"\n")
        if len(buf) >= _CHUNK:
            self.flush_out()

    def flush_out(self) -> None:
        if self.out is not None and self._outbuf:
            self.out.write(self._outbuf)
            self.out.flush()
            self._outbuf.clear()

    # ---------------------------------------------------------------- answer

    @property
    def correlated(self) -> list[RequestCorrelated]:
        """Every joined request (an Ingest made with keep_events=False keeps none: asking is an error)."""
        if self._cols is not None:
            raise RuntimeError("Ingest(keep_events=False) keeps no RequestCorrelated: make it with keep_events=True")
        return self._correlated

    def finish(self, *, close: Callable[[], Any] | None = None) -> IngestSummary:
        """End every input, close the join (pending halves become unmatched) and summarise. Nothing is fed
        after it."""
        # No cyclic GC while the join runs: each collection would walk every kept id (no cycles are made here).
        with gc_paused():
            for path in list(self._files):
                self.end(path)
            if self._cols is not None:
                if self._cols.answer() is None:
                    self._spill()  # a repeated id: the Joiner decides duplicates and merges, in arrival order
                else:
                    self._cols.release()  # the answer is kept; the halves are freed here, GC still paused
            if close is not None or self._joiner is not None:  # a joiner never made holds nothing
                self._derived((close or self.joiner.flush)())
            self.flush_out()
            return self.summary()

    def summary(self) -> IngestSummary:
        """The summary so far (follow mode prints it at the end)."""
        causes = dict(Counter(map(attrgetter("cause"), self._correlated)))
        unmatched: dict[str, dict[str, int]] = {}
        for u in self._unmatched:
            per = unmatched.setdefault(u.half, {})
            per[u.cause] = per.get(u.cause, 0) + 1
        journal = self._journal_correlated
        agreeing = sum(
            1 for c in self._correlated
            if (j := journal.get(c.request_id)) is not None and j.ok == c.ok and j.cause == c.cause
        ) if journal else 0
        sources = [f.summary for f in self._files.values()]
        # While the columns answer, every half is there: the Joiner took none.
        joined = self._cols.answer() if self._cols is not None else None
        if joined is None:
            joined = ColumnAnswer(len(self._correlated), sum(map(attrgetter("ok"), self._correlated)), causes,
                                  unmatched, latency_statistics(self._correlated))
        return IngestSummary(
            sources=sources,
            lines=sum(s.lines for s in sources),
            events=sum(self._by_format.values()),
            bad_lines=self._bad_total,
            bad=list(self._bad),
            by_format=dict(self._by_format),
            severities=dict(self._severities),
            client_records=self._clients + (self._cols.clients if self._cols is not None else 0),
            server_records=self._servers + (self._cols.servers if self._cols is not None else 0),
            duplicate_copies=self._duplicates,
            joined=joined.joined,
            joined_ok=joined.joined_ok,
            causes=joined.causes,
            unmatched=joined.unmatched,
            latency_ms=joined.latency_ms,
            first_unix_ns=self._first,
            last_unix_ns=self._last,
            journal_correlated=len(self._journal_correlated),
            journal_correlated_agreeing=agreeing,
            filtered=sum(s.filtered for s in sources),
        )


# ------------------------------------------------------------------------------------ follow, out








class Join(Protocol):
    """What the reader needs of the join (correlate.Joiner; a benchmark can stand in a join that does nothing)."""

    def add_client(self, rec: ClientRecord, now_ns: int = 0) -> list[Event]: ...
    def add_server(self, rec: ServerRecord, now_ns: int = 0) -> list[Event]: ...
    def add_clients(self, recs: Iterable[ClientRecord], now_ns: int = 0) -> list[Event]: ...
    def add_servers(self, recs: Iterable[ServerRecord], now_ns: int = 0) -> list[Event]: ...
    def flush(self) -> list[Event]: ...


def new_joiner() -> Joiner:
    """The correlator's pure join core, keyed like the live run (one implementation of the join)."""
    # Here, not at the top: the dataset package (soundfile; structlog through its facts cache) and the correlate
    # package (its live subscriber's bus and anyio streams) load only where a Joiner is made, which a summary the
    # column join answers never needs (bench/ingest.py measures the start).
    from orchestrator.correlate import Joiner
    from orchestrator.dataset import parse_session_key

    return Joiner(key_parser=parse_session_key, source="ingest")


