"""The run journal `events.jsonl` (or compact, `events.jsonl.zst`): the bus subscriber that writes it, the replay
reader, and the append-only line file with its torn-line reader underneath (the campaign journal uses them too)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import anyio
import msgspec
import zstandard
from anyio.abc import TaskStatus

from orchestrator.base.errors import JournalError
from orchestrator.events import SCHEMA_VERSION, AnyEvent, PhaseFinished, PhaseStarted, RunFinished, RunStarted
from orchestrator.spine.bus import Bus, Subscription
from orchestrator.spine.journal_upgrade import OLDEST_VERSION, upgrader, with_open_intervals
from orchestrator.spine.redaction import Redactor, is_secret_name

__all__ = ["JournalWriter", "JournalFile", "iter_journal", "read_journal", "read_lines", "TornLine", "encode_event",
           "decode_event"]

_encoder = msgspec.json.Encoder()
_ANY_EVENT: Any = AnyEvent  # the runtime tagged union (the type checker sees the Event base)
_decoder = msgspec.json.Decoder(_ANY_EVENT)
_SYNC_KINDS = (RunStarted, PhaseStarted, PhaseFinished, RunFinished)

PLAIN_JOURNAL = "events.jsonl"
COMPACT_JOURNAL = "events.jsonl.zst"
# A compact journal is one zstd stream whose blocks close at least once a second (and at every fsync point): a
# reader, or a live page tailing it, sees every event up to the last closed block, so a SIGKILL loses at most
# the last second. Level 9: a soak writes ~1 KB/s, far below what it costs, and each step down grows the file.
_ZSTD_LEVEL = 9
_BLOCK_EVERY_NS = 1_000_000_000
# 64 KiB of a compact journal is about a MiB of lines: decoded while in cache (1 MiB reads were slower).
_READ_BYTES = 1 << 16


def journal_path(run_dir: Path) -> Path:
    """The journal of run folder `run_dir`: `events.jsonl`, or `events.jsonl.zst` where only that exists."""
    plain, compact = run_dir / PLAIN_JOURNAL, run_dir / COMPACT_JOURNAL
    return compact if compact.exists() and not plain.exists() else plain


def is_compact(path: Path) -> bool:
    """Whether `path` names a compact (zstd) journal."""
    return path.name.endswith(".zst")


def encode_event(event: AnyEvent) -> bytes:
    """One journal line (without the newline)."""
    return _encoder.encode(event)


def decode_event(line: bytes | str) -> AnyEvent:
    """Decode one journal line; raises msgspec.DecodeError / ValidationError."""
    event: AnyEvent = _decoder.decode(line)
    return event


T = TypeVar("T")


class JournalFile:
    """An append-only file of whole lines: each append is written and flushed at once, fsynced when asked and
    at close. A `.zst` path is one zstd stream: appended lines reach the file when their block closes (`close`,
    `sync`, or `close_block()`, which the owner calls at least once a second). Blocks (file writes); one owner."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh = path.open("ab")
        self._zstd = zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compressobj() if is_compact(path) else None
        self.open_block = False  # lines compressed but not yet closed into a block that readers can decode
        self._block_ns = time.monotonic_ns()

    @property
    def compact(self) -> bool:
        return self._zstd is not None

    def append(self, lines: bytes | bytearray, *, sync: bool = False, close: bool = False) -> None:
        """Write `lines` (each ending in a newline) and flush; fsync too when `sync`. A compact file closes its
        block when `sync` or `close`, or when the block is a second old."""
        if self._zstd is None:
            self._fh.write(lines)
        else:
            self._fh.write(self._zstd.compress(bytes(lines)))
            self.open_block = True
            if sync or close or self.block_age_ns() >= _BLOCK_EVERY_NS:
                self._write_block_end()
        self._fh.flush()
        if sync:
            self.sync()

    def block_age_ns(self) -> int:
        """How long the open block has been open (since the last block closed)."""
        return time.monotonic_ns() - self._block_ns

    def close_block(self) -> None:
        """Close a compact file's open block and flush it, so readers see every line appended so far."""
        if self.open_block:
            self._write_block_end()
            self._fh.flush()

    def _write_block_end(self) -> None:
        assert self._zstd is not None
        self._fh.write(self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
        self.open_block, self._block_ns = False, time.monotonic_ns()

    def sync(self) -> None:
        """fsync what was written (blocks on the disk)."""
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Flush, fsync and close (blocks on the disk); a compact journal's stream is ended."""
        try:
            if self._zstd is not None:
                self._fh.write(self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
            self._fh.flush()
            self.sync()
        finally:
            self._fh.close()


# Writes are batched and fsynced at phase boundaries and at exit. A torn last line or compressed block (a crash
# mid-write) is reported and skipped; corruption anywhere else is a JournalError naming the line.
class JournalWriter:
    """Appends every bus event to `path`, credentials redacted. Start with `await tg.start(writer.run, bus)`.

    The redactor knows this process's secret-looking environment values, and learns those of the run's
    `[server] env` from RunStarted before writing it.
    """

    def __init__(self, path: Path, *, batch: int = 2048, redactor: Redactor | None = None) -> None:
        self.path = path
        self.batch = batch
        self.lines = 0
        self.last_seq = 0  # the seq of the last event written and flushed to the file (in a closed block)
        self._appended_seq = 0  # the seq of the last event appended (in a compact file, maybe in an open block)
        self._urgent = False  # a reader waits: close the open block now
        self._written = anyio.Event()
        self.redactor = redactor or Redactor.from_environ()

    def _clean(self, ev: AnyEvent) -> AnyEvent:
        if isinstance(ev, RunStarted):
            env = ev.config.server.env if ev.config is not None else {}
            self.redactor = self.redactor.learning(
                v for k, v in env.items() if isinstance(v, str) and is_secret_name(str(k)))
        return self.redactor.event(ev)

    async def wait_written(self, seq: int, timeout_s: float = 30.0) -> bool:
        """Block until every event up to `seq` is in the file (written and flushed, not fsynced), or for at
        most `timeout_s`; True when it is."""
        with anyio.move_on_after(timeout_s):
            while self.last_seq < seq:
                self._urgent = True
                await self._written.wait()
        return self.last_seq >= seq

    def _mark_written(self) -> None:
        self.last_seq, self._urgent = self._appended_seq, False
        self._written.set()
        self._written = anyio.Event()

    async def _close_blocks(self, out: JournalFile) -> None:
        """A compact journal's block closes once a second while the run is idle, at once when a reader waits."""
        while True:
            await anyio.sleep(0.05)
            if out.open_block and (self._urgent or out.block_age_ns() >= _BLOCK_EVERY_NS):
                out.close_block()
                self._mark_written()

    async def run(self, bus: Bus, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Runs until the bus closes (then drains, fsyncs and returns) or until cancelled (then fsyncs)."""
        out = JournalFile(self.path)
        sub = bus.subscribe("journal", size=8192)
        task_status.started()
        try:
            async with anyio.create_task_group() as tg:
                if out.compact:
                    tg.start_soon(self._close_blocks, out)
                # One buffer for the run: encoding the batch's first event at offset 0 empties it but keeps its
                # memory (clear() would free it, and each batch's regrowth fragmented a soak's heap).
                buf = bytearray()
                async for events in sub.batches(self.batch):
                    sync = False
                    for n, ev in enumerate(events):
                        _encoder.encode_into(self._clean(ev), buf, -1 if n else 0)
                        buf.extend(b"\n")
                        if isinstance(ev, _SYNC_KINDS):
                            sync = True
                    out.append(buf, close=sync or self._urgent)
                    self.lines += len(events)
                    self._appended_seq = max(self._appended_seq, events[-1].seq)
                    if not out.open_block:
                        self._mark_written()
                    if sync:
                        await anyio.to_thread.run_sync(out.sync)
                tg.cancel_scope.cancel()
        finally:
            # Synchronous on purpose: nothing here awaits, so a cancellation cannot cut the drain short.
            try:
                _drain_into(sub, out, self._clean)
            finally:
                out.close()
                sub.close()


def _drain_into(sub: Subscription, out: JournalFile, clean: Callable[[AnyEvent], AnyEvent]) -> None:
    """On cancellation, write what is still buffered so nothing published is lost."""
    buf = bytearray()
    while True:
        try:
            ev = sub.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
        _encoder.encode_into(clean(ev), buf, -1)
        buf.extend(b"\n")
    if buf:
        out.append(buf)


class TornLine(msgspec.Struct, frozen=True):
    """The last line of a journal that could not be decoded (a writer killed mid-line)."""

    path: str
    line: int
    text: bytes


def iter_journal(
    path: str | Path, *, on_torn: Callable[[TornLine], None] | None = None
) -> Iterator[AnyEvent]:
    """Yield the events of a journal in order. Blocks (file reads); streams, so memory stays flat.

    A journal of an older SCHEMA_VERSION (its RunStarted says which) is upgraded line by line as it is
    read. A last line that does not decode is passed to `on_torn` (or ignored when None) and skipped.
    Any other undecodable line raises JournalError with the file and line number, and so does a `seq`
    that does not grow: the bus numbers every event once, so a repeated or earlier seq means a line
    was duplicated or moved, and counting it would falsify every total.
    """
    p = Path(path)
    order = _SeqOrder(p)
    for lineno, raw, event in read_lines(p, _RunLines(p), on_torn=on_torn):
        yield order.check(event, lineno, raw)


class LineDecompressor:
    """Whole lines out of a compact journal's zstd stream, fed in pieces as it is read or as it grows: `feed`
    returns the lines completed so far (newline kept); `rest` holds a line still without its newline, and
    `mid_block` says the bytes fed so far stop inside a block (a writer still writing one, or killed)."""

    def __init__(self) -> None:
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._blocks = _BlockWalk()
        self.rest = b""

    @property
    def mid_block(self) -> bool:
        return self._blocks.mid_block

    def feed(self, data: bytes) -> list[bytes]:
        """Raises zstandard.ZstdError for bytes that are not a zstd stream."""
        self._blocks.walk(data)
        parts = [self.rest]
        while data:
            parts.append(self._d.decompress(data))
            if not self._d.eof:
                break
            # A frame ended (a journal appended to by a second writer holds several): go on with the next.
            data = self._d.unused_data
            self._d = zstandard.ZstdDecompressor().decompressobj()
        out = b"".join(parts)  # one copy; a bytearray grown piece by piece and copied twice was 2x slower
        end = out.rfind(b"\n") + 1
        self.rest = out[end:]
        return (out[:end] if end < len(out) else out).splitlines(keepends=True)


class _BlockWalk:
    """Follows a zstd stream's frame and block headers (RFC 8878) without decoding, to tell whether the bytes
    seen so far end between blocks: a reader cannot ask the decoder whether it holds half a block."""

    def __init__(self) -> None:
        self._buf = b""  # the bytes of a header not yet complete
        self._skip = 0  # content bytes of the current block (or the frame's checksum) still to come
        self._state = "frame"  # "frame": a frame header is next; "block": a block header is next
        self._checksum = 0
        self._last = False

    @property
    def mid_block(self) -> bool:
        return bool(self._buf) or self._skip > 0

    def walk(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n:
            if self._skip:
                step = min(self._skip, n - i)
                self._skip -= step
                i += step
                continue
            need = self._header_size()
            take = min(need - len(self._buf), n - i)
            self._buf += data[i:i + take]
            i += take
            if len(self._buf) == need and self._header_size() == need:
                self._consume_header()

    def _header_size(self) -> int:
        if self._state == "block":
            return 3
        if len(self._buf) < 5:
            return 5
        fhd = self._buf[4]
        single = fhd >> 5 & 1
        fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        return 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs

    def _consume_header(self) -> None:
        if self._state == "frame":
            self._checksum = 4 if self._buf[4] >> 2 & 1 else 0
            self._state = "block"
        else:
            header = int.from_bytes(self._buf, "little")
            size = 1 if (header >> 1 & 3) == 1 else header >> 3  # an RLE block holds one byte
            self._skip = size
            if header & 1:  # the frame's last block: its checksum follows, then the next frame
                self._skip += self._checksum
                self._state = "frame"
        self._buf = b""


def _file_lines(fh: IO[bytes], path: Path, on_cut: Callable[[int], None]) -> Iterator[bytes]:
    """The lines of an open journal file, decompressing a compact one; `on_cut(offset)` hears of a compact
    stream that stops inside a block (its lines are lost: a writer killed mid-block)."""
    if not is_compact(path):
        yield from fh
        return
    lines = LineDecompressor()
    try:
        while chunk := fh.read(_READ_BYTES):
            yield from lines.feed(chunk)
    except zstandard.ZstdError as exc:
        raise JournalError(f"{path}: corrupt compact journal near byte {fh.tell()}: {exc}") from None
    if lines.mid_block:
        on_cut(fh.tell())
    if lines.rest:
        yield lines.rest


def read_lines(path: Path, decode: Callable[[bytes], T], *, what: str = "journal", hint: str = "",
               on_torn: Callable[[TornLine], None] | None = None) -> Iterator[tuple[int, bytes, T]]:
    """(line number, line, decoded value) for each line of a journal file, in order. Blocks (file reads).

    The last line is torn (passed to `on_torn` and skipped) when it lacks its newline or does not decode: a
    writer killed mid-line. Any other line that does not decode raises JournalError naming the file and
    line; so does a file that cannot be opened (`hint` says what to pass instead).
    """
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise JournalError(f"{path}: cannot open {what}: {exc.strerror}" + (f"; {hint}" if hint else "")) from None
    with fh:
        pending: tuple[int, bytes] | None = None
        cut: list[int] = []
        for lineno, raw in enumerate(_file_lines(fh, path, cut.append), 1):
            if pending is not None:
                yield (*pending, _decode_or_raise(path, *pending, decode, what))
            pending = (lineno, raw)
        if cut:  # a compact journal's last block, cut short: named as a torn line is
            _torn(path, (pending[0] if pending else 0) + 1,
                  f"(a compressed block cut short at byte {cut[0]}: its events are lost)".encode(), on_torn)
        if pending is None:
            return
        last_no, last = pending
        if not last.endswith(b"\n"):
            _torn(path, last_no, last, on_torn)
            return
        try:
            value = decode(last)
        except (msgspec.DecodeError, msgspec.ValidationError):
            _torn(path, last_no, last, on_torn)
            return
        yield last_no, last, value


class _RunLines:
    """Decodes run journal lines; from a RunStarted of an older schema on, through that version's upgrader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.decode: Callable[[bytes], AnyEvent] = _decoder.decode
        self.upgrading = False

    def __call__(self, raw: bytes) -> AnyEvent:
        try:
            event = self.decode(raw)
        except msgspec.ValidationError:
            repaired = None if self.upgrading else with_open_intervals(raw)
            if repaired is None:
                raise
            return repaired
        if isinstance(event, RunStarted) and event.schema_version < SCHEMA_VERSION and not self.upgrading:
            self.decode, self.upgrading = _upgrader(self.path, event.schema_version, event.command), True
            event = self.decode(raw)
        return event


class _SeqOrder:
    """Checks that the bus's `seq` grows line by line within each run (events never stamped by a bus
    carry seq 0; a file that `aqbench ingest --out` merged from several runs keeps each run's order)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last: dict[str, tuple[int, int]] = {}  # run_id -> (seq, line) of its latest event

    def check(self, event: AnyEvent, lineno: int, raw: bytes) -> AnyEvent:
        if event.seq:
            last_seq, last_line = self.last.get(event.run_id, (0, 0))
            if event.seq <= last_seq:
                what = (f"repeats line {last_line}'s" if event.seq == last_seq
                        else f"comes after seq {last_seq} (line {last_line})")
                raise JournalError(
                    f"{self.path}:{lineno}: corrupt journal: seq {event.seq} {what}; a line was duplicated or "
                    f"moved, so counts from this journal would be wrong. Line starts: {raw[:80]!r}")
            self.last[event.run_id] = (event.seq, lineno)
        return event


def _upgrader(p: Path, version: int, command: str) -> Callable[[bytes], AnyEvent]:
    """A line decoder that brings a journal of `version` to the current schema (journal_upgrade.py)."""
    try:
        return upgrader(version, command)
    except ValueError:
        raise JournalError(f"{p}: journal schema version {version} is not one this aqbench reads "
                           f"(it reads {OLDEST_VERSION} to {SCHEMA_VERSION}); use the aqbench release that wrote it"
                           ) from None


def _torn(p: Path, lineno: int, raw: bytes, on_torn: Callable[[TornLine], None] | None) -> None:
    if raw.strip() and on_torn is not None:
        on_torn(TornLine(path=str(p), line=lineno, text=raw[:200]))


def _decode_or_raise(p: Path, lineno: int, raw: bytes, decode: Callable[[bytes], T], what: str) -> T:
    try:
        return decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise JournalError(
            f"{p}:{lineno}: corrupt {what} line ({exc}); only the last line may be torn. "
            f"Line starts: {raw[:80]!r}"
        ) from None


def read_journal(path: str | Path) -> tuple[list[AnyEvent], TornLine | None]:
    """All events of a (small) journal plus its torn last line, if any. For tests and short runs."""
    torn: list[TornLine] = []
    events = list(iter_journal(path, on_torn=torn.append))
    return events, (torn[0] if torn else None)
