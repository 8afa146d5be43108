"""`aqbench ingest` composition root: inputs -> format detection -> normalised events -> join -> summary.

Reads files (plain, gzip, zstd), folders and standard input; never blocks on the network. Decoding is
batched: a run of complete lines in one known format is decoded with one msgspec call, and only when
that fails is it retried line by line to find, classify and count the bad lines.
"""

from __future__ import annotations

import gc
import glob
import gzip
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, Literal

import anyio
import msgspec

from adapters.logs import FORMATS, LineFormat, OtelLog, file_format, from_log_line, is_known_name, sniff, to_log_line
from adapters.logs.server_records import incarnation_from_name
from orchestrator.errors import AqbenchError, UsageError
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
from orchestrator.stats import Summary, summarize

__all__ = [
    "BadLine", "BadLineError", "SourceSummary", "IngestSummary", "Ingest", "expand_inputs", "read_chunks",
    "latency_statistics", "new_joiner", "run_follow", "write_parquet",
]

BadCause = Literal["invalid_json", "wrong_types", "torn_last_line"]
# 256 KiB reads keep a chunk and its lines in cache while they are decoded (1 MiB was slower).
_CHUNK = 1 << 18
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError)
# Events the correlator derives: ingest derives them again from the halves, so copies read from a
# journal are counted (and compared), not re-emitted.
_DERIVED = (RequestCorrelated, RequestUnmatched, AccountingChecked, RequestsInFlight)
_replace = msgspec.structs.replace


class BadLineError(AqbenchError):
    """`--strict` and a line that did not decode in its file's format (exit 2, names file:line)."""

    exit_code = 2


class BadLine(msgspec.Struct, frozen=True):
    """A line that could not be read as its file's format (nor as any other), kept for the listing."""

    path: str
    line: int
    cause: BadCause
    error: str
    text: str


class SourceSummary(msgspec.Struct, kw_only=True):
    """What one input gave: lines read, events per format, bad and blank lines, lines filtered out."""

    path: str
    format: str = ""
    lines: int = 0
    blank: int = 0
    bad: int = 0
    filtered: int = 0
    events: dict[str, int] = {}


class IngestSummary(msgspec.Struct, kw_only=True):
    """The answer of an ingest (printed as text, or as JSON with `--summary-json`)."""

    sources: list[SourceSummary]
    lines: int
    events: int
    bad_lines: int
    bad: list[BadLine]
    by_format: dict[str, int]
    severities: dict[str, int]
    client_records: int
    server_records: int
    duplicate_copies: int
    joined: int
    joined_ok: int
    causes: dict[str, int]
    unmatched: dict[str, dict[str, int]]
    latency_ms: dict[str, Summary]
    first_unix_ns: int | None
    last_unix_ns: int | None
    journal_correlated: int = 0
    journal_correlated_agreeing: int = 0
    filtered: int = 0


TIMING_FIELDS = ("request_latency_ms", "client_lifecycle_ms", "handler_ms", "model_call_ms", "worker_roundtrip_ms")


def latency_statistics(correlated: Iterable[RequestCorrelated]) -> dict[str, Summary]:
    """Client vs server latency over successful profiling requests: the population and fields of the
    live report's window timing (orchestrator.reports.fold), through the same `summarize`."""
    rows = [c for c in correlated if c.ok and c.phase == "profiling"]
    # map + attrgetter and a list without the Nones: C loops over up to a million rows.
    return {name: summarize([v for v in map(attrgetter(name), rows) if v is not None]) for name in TIMING_FIELDS}


# ----------------------------------------------------------------------------------------- inputs


def expand_inputs(specs: Iterable[str], *, allow_missing: bool = False) -> list[str]:
    """Files for the given paths, globs and folders (walked recursively for known names), in order;
    `-` stays `-` (standard input). Raises UsageError naming a spec that matched nothing, except with
    `allow_missing` (follow mode), where such a spec just gives nothing yet (a plain path is kept)."""
    out: list[str] = []
    seen: set[str] = set()
    for spec in specs:
        if spec == "-":
            found = ["-"]
        elif os.path.isdir(spec):
            found = sorted(
                os.path.join(root, name)
                for root, _dirs, names in os.walk(spec)
                for name in names
                if is_known_name(name)
            )
        elif os.path.exists(spec):
            found = [spec]
        else:
            found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
            if not found and allow_missing:
                found = [] if glob.has_magic(spec) else [spec]
            elif not found:
                raise UsageError(f"ingest: {spec!r} is not a file, a folder or a glob that matches files")
        for path in found:
            if path not in seen:
                seen.add(path)
                out.append(path)
    return out


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    magic = fh.read(4)
    fh.seek(0)
    if magic[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    if magic == b"\x28\xb5\x2f\xfd":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(fh, closefd=True)  # type: ignore[return-value]
    return fh


def read_chunks(path: str, size: int = _CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of a file (or stdin for `-`) in chunks. Blocks on reads."""
    fh = _open(path)
    try:
        while chunk := fh.read(size):
            yield chunk
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


# ------------------------------------------------------------------------------------------- core


def _is_json(line: bytes) -> bool:
    try:
        msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return True


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC while a chunk is decoded: ingest keeps every half until it is joined, and each
    collection would walk all of them (3x slower in bench/ingest.py). Decoding creates no cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()



class _File:
    """Per-input reading state: its format, line counter and the unterminated tail of the last chunk."""

    def __init__(self, path: str, summary: SourceSummary) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.summary = summary
        self.format: LineFormat | None = None
        self.lineno = 0
        self.pending = b""
        self.source = f"ingest:{path}"
        self.incarnation = incarnation_from_name(self.name)


class Ingest:
    """Feeds lines of many inputs through detection, decoding and the join; `finish()` gives the answer.

    Not thread-safe; one instance per command. `joiner` is the correlator's pure join core.
    """

    def __init__(
        self,
        joiner: Any,
        *,
        since_ns: int | None = None,
        until_ns: int | None = None,
        strict: bool = False,
        out: BinaryIO | None = None,
        max_listed: int = 100,
    ) -> None:
        self.joiner = joiner
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

    # ---------------------------------------------------------------- feeding

    def _file(self, path: str) -> _File:
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = _File(path, SourceSummary(path=path))
        return f

    def feed_path(self, path: str) -> None:
        """Read a whole file (or stdin); its last line may be unterminated."""
        f = self._file(path)
        # One pause for the whole file, not one per chunk: each re-enable would let a collection
        # walk every half still waiting for its other half (the records file is read before the
        # export, so that is all of them).
        with _gc_paused():
            for chunk in read_chunks(path):
                self.feed(path, chunk)
            self.end(f.path)

    def feed(self, path: str, chunk: bytes) -> None:
        """Bytes appended to `path`; complete lines are processed, the rest waits for more."""
        f = self._file(path)
        # Split the chunk itself (no copy of the whole chunk): only the carried-over tail is joined.
        lines = chunk.split(b"\n")
        if f.pending:
            lines[0] = f.pending + lines[0]
        f.pending = lines.pop()
        if lines:
            self._lines(f, lines)

    def feed_lines(self, path: str, lines: list[bytes]) -> None:
        """Whole lines (without newlines) from a follower."""
        if lines:
            self._lines(self._file(path), lines)

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
        with _gc_paused():
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
        name = file_format(f.name, first)
        f.format = FORMATS[name]
        f.summary.format = name

    def _one(self, f: _File, fmt: LineFormat, line: bytes, lineno: int, *, torn: bool) -> None:
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
        other = sniff(line)
        if other is not None and other != fmt.name and (fmt.kind == "logs" or other != "json"):
            try:
                item = FORMATS[other].decode_line(line)
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

    def _emit(self, f: _File, fmt: str, items: list[Any]) -> None:
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
            elif isinstance(item, OtelLog):
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
        keys = [(r.request_id, r.incarnation, r.end_unix_ns, r.handler_ms) for r in items]
        if len(set(keys)) != len(keys) or not self._server_keys.isdisjoint(keys):
            for r in items:
                self._server(r, r.end_unix_ns or r.ts_ns, f.source)
            self._count(f, "server_records", "server_record", len(items))
            return
        self._server_keys.update(keys)
        self._servers += len(items)
        ends = [r.end_unix_ns for r in items if r.end_unix_ns]
        if ends:
            self._span(min(ends))
            self._span(max(ends))
        if self.out is not None:
            for r in items:
                self._write(_replace(r, source=f.source, ts_ns=r.end_unix_ns or 0) if not r.source else r)
        produced = self.joiner.add_servers(items)
        if produced:
            self._derived(produced)
        self._count(f, "server_records", "server_record", len(items))

    def _emit_clients(self, f: _File, items: list[ClientRecord]) -> None:
        """A run of one AIPerf export's lines: the same steps as `_client`, a list at a time."""
        fmt = f.summary.format
        items = self._windowed(f, items, lambda r: r.request_start_ns or r.ts_ns)
        keys = [(r.request_id, r.request_start_ns) for r in items]
        if len(set(keys)) != len(keys) or not self._client_keys.isdisjoint(keys):
            for r in items:
                self._client(r, r.request_start_ns or r.ts_ns, f.source)
            self._count(f, fmt, "client_record", len(items))
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
                self._write(_replace(r, source=f.source) if not r.source else r)
        produced = self.joiner.add_clients(items)
        if produced:
            self._derived(produced)
        self._count(f, fmt, "client_record", len(items))

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

    def _log(self, rec: OtelLog, f: _File, ts: int | None) -> None:
        level = rec.severity_text.lower() or "unspecified"
        self._severities[level] = self._severities.get(level, 0) + 1
        if ts:
            self._span(ts)
        if self.out is not None:
            self._write(to_log_line(rec, stream=f.name, source=f.source))

    def _journal_event(self, ev: Event) -> None:
        if isinstance(ev, ClientRecord):
            self._client(ev, ev.request_start_ns or ev.ts_ns, ev.source)
            return
        if isinstance(ev, ServerRecord):
            self._server(ev, ev.end_unix_ns or ev.ts_ns, ev.source)
            return
        self._span(ev.ts_ns)
        if isinstance(ev, LogLine):
            otel = from_log_line(ev)
            level = otel.severity_text.lower() or "unspecified"
            self._severities[level] = self._severities.get(level, 0) + 1
        if isinstance(ev, _DERIVED):
            if isinstance(ev, RequestCorrelated):
                self._journal_correlated[ev.request_id] = ev
            return
        if self.out is not None:
            self._write(ev)

    def _derived(self, produced: Any) -> None:
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
        self._encoder.encode_into(ev, buf, -1)
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
        return self._correlated

    def finish(self, *, close: Callable[[], Any] | None = None) -> IngestSummary:
        """End every input, close the join (pending halves become unmatched) and summarise."""
        for path in list(self._files):
            self.end(path)
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
        return IngestSummary(
            sources=sources,
            lines=sum(s.lines for s in sources),
            events=sum(self._by_format.values()),
            bad_lines=self._bad_total,
            bad=list(self._bad),
            by_format=dict(self._by_format),
            severities=dict(self._severities),
            client_records=self._clients,
            server_records=self._servers,
            duplicate_copies=self._duplicates,
            joined=len(self._correlated),
            joined_ok=sum(map(attrgetter("ok"), self._correlated)),
            causes=causes,
            unmatched=unmatched,
            latency_ms=latency_statistics(self._correlated),
            first_unix_ns=self._first,
            last_unix_ns=self._last,
            journal_correlated=len(self._journal_correlated),
            journal_correlated_agreeing=agreeing,
            filtered=sum(s.filtered for s in sources),
        )


# ------------------------------------------------------------------------------------ follow, out


def _compressed(path: str) -> bool:
    return path.endswith((".gz", ".zst", ".zstd"))


async def run_follow(
    ingest: Ingest, specs: list[str], *, poll_s: float = 0.05, rescan_s: float = 1.0,
    stop: anyio.Event | None = None,
) -> None:
    """Follow every input like `tail -F` until `stop` is set or the caller's scope is cancelled.

    Specs are expanded again every `rescan_s` so new files (a rotated-in name, a new run folder) join.
    Compressed files cannot grow and are read once. Line numbers restart at 1 after a truncation or
    a replacement (for a rotation, lines drained from the old file still count in the old numbering).
    On the way out (cancellation included) each file's final, possibly unterminated line is read.
    """
    from adapters.tail import LineFollower

    followers: dict[str, LineFollower] = {}
    stop = stop or anyio.Event()
    next_scan = 0.0
    try:
        while not stop.is_set():
            now = anyio.current_time()
            if now >= next_scan:
                next_scan = now + rescan_s
                for path in expand_inputs(specs, allow_missing=True):
                    if path in followers:
                        continue
                    if _compressed(path):
                        followers[path] = None  # type: ignore[assignment]
                        ingest.feed_path(path)
                    else:
                        followers[path] = LineFollower(path, poll_s=poll_s)
            for path, fol in followers.items():
                if fol is not None:
                    _read(ingest, path, fol, final=False)
            ingest.flush_out()
            with anyio.move_on_after(poll_s):
                await stop.wait()
    finally:
        for path, fol in followers.items():
            if fol is not None:
                _read(ingest, path, fol, final=True)
                fol.close()
        ingest.flush_out()


def _read(ingest: Ingest, path: str, fol: Any, *, final: bool) -> None:
    before, torn = fol.truncations, fol.torn
    lines = fol.read_available(final=final)
    if fol.truncations != before:
        ingest.restart(path)
    if fol.torn != torn and lines:
        # The follower handed out an unterminated last line: it goes through the torn-line path.
        ingest.feed_lines(path, lines[:-1])
        ingest.feed(path, lines[-1])
        ingest.end(path)
    else:
        ingest.feed_lines(path, lines)


def new_joiner() -> Any:
    """The correlator's pure join core, keyed like the live run (one implementation of the join)."""
    from orchestrator.correlate import Joiner
    from orchestrator.dataset import parse_session_key

    return Joiner(key_parser=parse_session_key, source="ingest")


def write_parquet(correlated: list[RequestCorrelated], path: str) -> None:
    """One row per correlated request, columns = RequestCorrelated's fields. Blocks (file write)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = [f for f in RequestCorrelated.__struct_fields__ if f not in ("run_id", "seq", "mono_ns")]
    columns = {f: [getattr(c, f) for c in correlated] for f in fields}
    table = pa.table(columns) if correlated else pa.table({f: pa.array([], pa.null()) for f in fields})
    pq.write_table(table, path)
