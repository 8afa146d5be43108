"""The run journal `events.jsonl`: a lossless bus subscriber that writes it, and a replay reader; and the
append-only line file and torn-line reader underneath, which the campaign journal uses too.

Writes are batched (one write + flush per batch) and fsynced at phase boundaries and at exit. The reader
yields typed events; a torn last line (a crash mid-write) is reported and skipped, corruption anywhere
else is a JournalError naming the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import msgspec
from anyio.abc import TaskStatus

from orchestrator.bus import Bus, Subscription
from orchestrator.errors import JournalError
from orchestrator.events import SCHEMA_VERSION, AnyEvent, PhaseFinished, PhaseStarted, RunFinished, RunStarted
from orchestrator.journal_upgrade import OLDEST_VERSION, upgrader
from orchestrator.redaction import Redactor, is_secret_name

__all__ = ["JournalWriter", "JournalFile", "iter_journal", "read_journal", "read_lines", "TornLine", "encode_event",
           "decode_event"]

_encoder = msgspec.json.Encoder()
_ANY_EVENT: Any = AnyEvent  # the runtime tagged union (the type checker sees the Event base)
_decoder = msgspec.json.Decoder(_ANY_EVENT)
_SYNC_KINDS = (RunStarted, PhaseStarted, PhaseFinished, RunFinished)


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
    at close. Blocks (file writes); its one owner writes from one task."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh = path.open("ab")

    def append(self, lines: bytes | bytearray, *, sync: bool = False) -> None:
        """Write `lines` (each ending in a newline) and flush; fsync too when `sync`."""
        self._fh.write(lines)
        self._fh.flush()
        if sync:
            self.sync()

    def sync(self) -> None:
        """fsync what was written (blocks on the disk)."""
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Flush, fsync and close (blocks on the disk)."""
        try:
            self._fh.flush()
            self.sync()
        finally:
            self._fh.close()


class JournalWriter:
    """Appends every bus event to `path`, credentials redacted. Start with `await tg.start(writer.run, bus)`.

    The redactor knows this process's secret-looking environment values, and learns those of the run's
    `[server] env` from RunStarted before writing it.
    """

    def __init__(self, path: Path, *, batch: int = 2048, redactor: Redactor | None = None) -> None:
        self.path = path
        self.batch = batch
        self.lines = 0
        self.last_seq = 0  # the seq of the last event written and flushed to the file
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
                await self._written.wait()
        return self.last_seq >= seq

    async def run(self, bus: Bus, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Runs until the bus closes (then drains, fsyncs and returns) or until cancelled (then fsyncs)."""
        out = JournalFile(self.path)
        sub = bus.subscribe("journal", size=8192)
        task_status.started()
        try:
            # One buffer for the run: encoding the batch's first event at offset 0 empties it but keeps its
            # memory (clear() would free it, and each batch's regrowth fragmented a soak's heap; issue 23).
            buf = bytearray()
            async for events in sub.batches(self.batch):
                sync = False
                for n, ev in enumerate(events):
                    _encoder.encode_into(self._clean(ev), buf, -1 if n else 0)
                    buf.extend(b"\n")
                    if isinstance(ev, _SYNC_KINDS):
                        sync = True
                out.append(buf)
                self.lines += len(events)
                self.last_seq = max(self.last_seq, events[-1].seq)
                self._written.set()
                self._written = anyio.Event()
                if sync:
                    await anyio.to_thread.run_sync(out.sync)
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
        for lineno, raw in enumerate(fh, 1):
            if pending is not None:
                yield (*pending, _decode_or_raise(path, *pending, decode, what))
            pending = (lineno, raw)
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
        event = self.decode(raw)
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
