"""Ingest's join over columns: halves kept as arrays while every request id is new (the Joiner's answer in any
order of arrival), joined once into the summary's figures; on a repeated id, `records` replays them into the
Joiner. Keeps no event per line; reads no file."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import chain
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from orchestrator.base.columns import INT_ABSENT, Floats, Ints
from orchestrator.events import ClientRecord, ServerRecord
from orchestrator.ingest.summary import TIMING_FIELDS
from orchestrator.judge.accounting import category_of, cause_of
from orchestrator.judge.stats import Summary
from orchestrator.spine.ports import ClientColumns, ServerColumns

__all__ = ["ColumnJoin", "ColumnAnswer", "summarize_array"]

_PHASES = ("warmup", "profiling", "unknown")
_PHASE_CODE = {p: i for i, p in enumerate(_PHASES)}
Rows = npt.NDArray[np.uint8]
Words = npt.NDArray[np.uint64]
Ids = Rows | list[str]  # a block's request ids: rows of bytes where all are ASCII of one width, else strings


def span(arr: Ints) -> tuple[int, int] | None:
    """The least and greatest known, nonzero value of an int column (the reader's time span)."""
    known = arr[(arr != INT_ABSENT) & (arr != 0)]
    return (int(known.min()), int(known.max())) if known.size else None


def _int_list(arr: Ints) -> list[int | None]:
    return [None if v == INT_ABSENT else v for v in arr.tolist()]


def _float_list(arr: Floats) -> list[float | None]:
    return [None if v != v else v for v in arr.tolist()]


def summarize_array(values: Floats) -> Summary:
    """judge.stats.summarize over a float array (NaN standing for an absent value): the same figures."""
    xs = values[~np.isnan(values)]
    if not xs.size:
        return Summary()
    p50, p90, p99 = _percentiles(xs, (50, 90, 99))
    # fsum over the array's memoryview (xs.data): the floats one at a time, not a list of them all (half the time).
    return Summary(count=int(xs.size), mean=math.fsum(xs.data) / xs.size, p50=p50, p90=p90, p99=p99,
                   min=float(xs.min()), max=float(xs.max()))


def _percentiles(xs: Floats, qs: tuple[int, ...]) -> list[float]:
    """np.percentile(xs, qs, method="linear"), step for step (its index, weight and interpolation), without
    the numpy.ma import that np.percentile brings (a tenth of a second of ingest's start: bench/ingest.py)."""
    n = xs.size
    virtual = [(n - 1) * (q / 100) for q in qs]
    below = [math.floor(v) for v in virtual]
    picks = sorted({min(max(i, 0), n - 1) for b in below for i in (b, b + 1)})
    part = np.partition(xs, picks)
    out = []
    for v, b in zip(virtual, below, strict=True):
        if v >= n - 1:
            out.append(float(part[n - 1]))
            continue
        lo, hi, t = float(part[b]), float(part[b + 1]), v - b
        diff = hi - lo
        out.append(hi - diff * (1 - t) if t >= 0.5 else lo + diff * t)
    return out


def _lifecycle_ms(start: Ints, end: Ints) -> Floats:
    """(end - start) / 1e6 where both are known, as the Joiner computes it (int difference, then / 1e6)."""
    out = np.full(start.size, np.nan)
    both = (start != INT_ABSENT) & (end != INT_ABSENT)
    out[both] = (end[both] - start[both]) / 1e6
    return out


def _fixed_width(ids: list[str]) -> Ids:
    """A block's ids as rows of bytes (n x width) where all are ASCII of one length (request ids usually are: no
    string kept per id, and the join hashes them in one pass: bench/ingest.py); else the strings themselves."""
    # Each id followed by a newline: equal lengths exactly when every row ends in the one newline of its id.
    joined = "\n".join(ids) + "\n"
    width, rest = divmod(len(joined), len(ids) or 1)
    if rest or width < 2 or not joined.isascii():
        return ids
    data = np.frombuffer(joined.encode("ascii"), np.uint8)
    rows = data.reshape(len(ids), width)
    if not (rows[:, -1] == 10).all() or int(np.count_nonzero(data == 10)) != len(ids):
        return ids
    return rows[:, :-1]


def _id_list(ids: Ids) -> list[str]:
    """The ids as strings."""
    if isinstance(ids, list):
        return ids
    width = ids.shape[1]
    text = ids.tobytes().decode("ascii")
    return [text[i:i + width] for i in range(0, len(text), width)]


def _words(blocks: list[_Servers] | list[_Clients]) -> tuple[Words, int] | None:
    """A half's ids as columns of uint64 words (word j of every id contiguous, zero-padded: hashed, gathered and
    compared 8 bytes at a time) and their width in bytes, where every block has them as rows of bytes of one
    width; else None."""
    kept = [b.ids for b in blocks if b.n]
    rows = [ids for ids in kept if not isinstance(ids, list)]
    if not rows or len(rows) < len(kept) or any(r.shape[1] != rows[0].shape[1] for r in rows):
        return None
    width = rows[0].shape[1]
    padded = np.zeros((sum(map(len, rows)), -(-width // 8) * 8), np.uint8)
    at = 0
    for r in rows:
        padded[at:at + len(r), :width] = r
        at += len(r)
    return np.ascontiguousarray(padded.view(np.uint64).T), width


def _objects(blocks: list[_Servers] | list[_Clients], n: int) -> npt.NDArray[np.object_]:
    """A half's ids as an array of strings."""
    return np.fromiter(chain.from_iterable(_id_list(b.ids) for b in blocks), dtype=object, count=n)


def _row_hash(words: Words) -> Ints:
    """A 64-bit hash of each id's words (multiplied and folded in wrapping uint64 arithmetic); equal ids hash
    equal, and the join checks the ids of equal hashes."""
    h = np.full(words.shape[1], len(words), np.uint64)
    for w in words:
        h ^= w
        h *= _MIX
        h ^= h >> np.uint64(29)
    return h.view(np.int64)


_MIX = np.uint64(0x9E3779B97F4A7C15)


def sorted_hashes(hashes: Words) -> tuple[Ints, Words]:
    """The order that sorts `hashes` and the hashes in it. One np.sort of keys that carry each row's number in
    their low bits (3x np.argsort's pace), where the hashes' other bits differ; else np.argsort."""
    n = hashes.size
    low = np.uint64((1 << max(n - 1, 1).bit_length()) - 1)
    keys = hashes & ~low
    keys |= np.arange(n, dtype=np.uint64)
    keys.sort()
    high = keys & ~low
    if (high[1:] == high[:-1]).any():  # two high parts alike: the low bits would decide their order
        order = np.argsort(hashes)
    else:
        keys &= low
        order = keys.view(np.int64)
    return order, hashes[order]


class _Servers:
    __slots__ = ("base", "incarnation", "n", "ids", "status", "error_code", "times", "end")

    def __init__(self, base: int, cols: ServerColumns, incarnation: int) -> None:
        self.base, self.incarnation, self.n = base, incarnation, len(cols.request_id)
        self.ids = _fixed_width(cols.request_id)
        self.status, self.error_code, self.times, self.end = cols.status, cols.error_code, cols.times, cols.end_unix_ns

    def records(self) -> list[ServerRecord]:
        """The ServerRecords, with every field the join and the summary read."""
        handler, model, worker = (_float_list(t) for t in self.times)
        return [ServerRecord(request_id=rid, status=st, error_code=ec, handler_ms=h, model_call_ms=m,
                             worker_roundtrip_ms=w, end_unix_ns=e, incarnation=self.incarnation)
                for rid, st, ec, h, m, w, e in zip(_id_list(self.ids), self.status.tolist(), self.error_code, handler,
                                                   model, worker, _int_list(self.end), strict=True)]


class _Clients:
    __slots__ = ("base", "n", "ids", "phase", "start", "end", "latency", "odd")

    def __init__(self, base: int, cols: ClientColumns) -> None:
        self.base, self.odd = base, cols.odd
        self.n = n = len(cols.request_id)
        self.ids = _fixed_width(cols.request_id)
        phase = cols.phase
        code = _PHASE_CODE.get(phase[0]) if n else None
        if code is not None and phase.count(phase[0]) == n:  # a block of one phase (most are): no lookup per row
            self.phase = np.full(n, code, np.uint8)
        else:
            self.phase = np.fromiter(map(_PHASE_CODE.__getitem__, phase), np.uint8, n)  # KeyError: not a Phase
        self.start, self.end, self.latency = cols.request_start_ns, cols.request_end_ns, cols.request_latency_ms

    def records(self) -> list[ClientRecord]:
        """The ClientRecords: each odd row whole, the others with every field the join and the summary read
        (an ok row's HTTP status, below 400 or none, is not among them)."""
        odd = self.odd
        return [odd[i] if i in odd else ClientRecord(
                    request_id=rid, via="ingest", phase=_PHASES[ph], request_start_ns=s,  # type: ignore[arg-type]
                    request_end_ns=e, request_latency_ms=lat)
                for i, (rid, ph, s, e, lat) in enumerate(zip(
                    _id_list(self.ids), self.phase.tolist(), _int_list(self.start), _int_list(self.end), _float_list(self.latency),
                    strict=True))]


class ColumnAnswer(NamedTuple):
    """The summary's join figures, as IngestSummary names them (valid while `unique()`)."""

    joined: int
    joined_ok: int
    causes: dict[str, int]
    unmatched: dict[str, dict[str, int]]
    latency_ms: dict[str, Summary]


class ColumnJoin:
    """Halves kept as column blocks in arrival order. Not thread-safe; no I/O."""

    def __init__(self) -> None:
        self._blocks: list[_Servers | _Clients] = []
        self._rows = 0
        self.servers = self.clients = 0
        self._answer: ColumnAnswer | bool | None = False  # False: not computed since the last block

    def add_servers(self, cols: ServerColumns, incarnation: int) -> tuple[int, int] | None:
        """Keep a block of server halves; returns the span of its end times (None: no time)."""
        block = _Servers(self._rows, cols, incarnation)
        self._keep(block)
        self.servers += block.n
        return span(block.end)

    def add_clients(self, cols: ClientColumns) -> tuple[int, int] | Literal[False] | None:
        """Keep a block of client halves; returns the span of their start and end times (None: no time), or
        False, with nothing kept, where a phase is not one of ours (the caller then hands every half to the
        Joiner)."""
        try:
            block = _Clients(self._rows, cols)
        except KeyError:
            return False
        self._keep(block)
        self.clients += block.n
        return span(np.concatenate((block.start, block.end)))

    def _keep(self, block: _Servers | _Clients) -> None:
        self._blocks.append(block)
        self._rows += block.n
        self._answer = False

    def release(self) -> None:
        """Free the halves once the answer is computed (it stays); no block may be added after."""
        assert self._answer is not False, "release() before answer()"
        self._blocks.clear()

    def _match(self, servers: list[_Servers], clients: list[_Clients]) -> Ints | None:
        """Each client row's server row (-1: none), joined on the ids' hashes (sorted, searched) and checked on
        the ids themselves; None where two ids of one half share a hash (a repeated id, or a collision). A dict
        of the ids took three times as long (its lookups miss the cache; the sorted search walks in order)."""
        swords, cwords = _words(servers), _words(clients)
        server_keys: Words | npt.NDArray[np.object_]
        client_keys: Words | npt.NDArray[np.object_]
        if swords is not None and cwords is not None and swords[1] == cwords[1]:  # the same width
            server_keys, client_keys = swords[0], cwords[0]
            sh, ch = _row_hash(server_keys), _row_hash(client_keys)
        else:
            server_keys, client_keys = _objects(servers, self.servers), _objects(clients, self.clients)
            sh = np.fromiter(map(hash, server_keys), np.int64, server_keys.size)
            ch = np.fromiter(map(hash, client_keys), np.int64, client_keys.size)
        (order, ss), (corder, cs) = sorted_hashes(sh.view(np.uint64)), sorted_hashes(ch.view(np.uint64))
        if (ss[1:] == ss[:-1]).any() or (cs[1:] == cs[:-1]).any():
            return None
        if not ss.size:
            return np.full(ch.size, -1, np.int64)
        # Sorted queries: the search walks the servers' hashes in order (random ones were 4x slower).
        at = np.minimum(np.searchsorted(ss, cs), ss.size - 1)
        row = np.empty(ch.size, np.int64)
        row[corder] = np.where(ss[at] == cs, order[at], -1)
        hit = row >= 0
        # Words or object arrays: the gather and the comparison run in C (lists took twice as long).
        if server_keys.dtype == np.uint64:
            pairs = np.flatnonzero(hit)
            same = all(np.array_equal(s.take(row[pairs]), c.take(pairs)) for s, c in zip(server_keys, client_keys,
                                                                                         strict=True))
        else:
            same = bool((server_keys[row[hit]] == client_keys[hit]).all())
        if not same:
            return None  # equal hashes of different ids: the Joiner decides
        return row

    def records(self) -> Iterator[tuple[list[ServerRecord], list[ClientRecord]]]:
        """Every block as records (servers, or clients), in arrival order (for the Joiner, when the columns
        cannot answer)."""
        for block in self._blocks:
            yield (block.records(), []) if isinstance(block, _Servers) else ([], block.records())

    def answer(self) -> ColumnAnswer | None:
        """The join's figures (causes in the order the Joiner first settles each); None where a request id
        repeats within the server halves or within the client halves (then only the Joiner can tell)."""
        if self._answer is False:
            self._answer = self._compute()
        return self._answer  # type: ignore[return-value]

    def _compute(self) -> ColumnAnswer | None:
        servers = [b for b in self._blocks if isinstance(b, _Servers)]
        clients = [b for b in self._blocks if isinstance(b, _Clients)]
        n = self.clients
        row = self._match(servers, clients)
        if row is None:
            return None
        matched = row >= 0
        names = ["ok", "unmatched"]
        code = np.where(matched, 0, 1).astype(np.int16)
        error_code = list(chain.from_iterable(b.error_code for b in servers)) if any(b.odd for b in clients) else []
        offset = 0
        # A cause reads the client's outcome fields and the server's error code: rows alike share one (failures
        # usually come in a few kinds), so each kind is classified once.
        known: dict[tuple[object, ...], int] = {}
        for b in clients:
            for i, rec in b.odd.items():
                r = int(row[offset + i])
                key = (rec.was_cancelled, rec.status_code, rec.error_code, rec.error_type, rec.error_message,
                       error_code[r] if r >= 0 else None)
                c = known.get(key)
                if c is None:
                    server = ServerRecord(request_id=rec.request_id, error_code=error_code[r]) if r >= 0 else None
                    cause = cause_of(rec, server, crashed=False, category=category_of(rec))
                    if cause not in names:
                        names.append(cause)
                    c = known[key] = names.index(cause)
                code[offset + i] = c
            offset += b.n
        ok = code == 0
        # The Joiner settles a pair when its second half arrives and a lone client half at the end.
        cpos = np.concatenate([b.base + np.arange(b.n) for b in clients]) if clients else np.zeros(0, np.int64)
        spos = np.concatenate([b.base + np.arange(b.n) for b in servers]) if servers else np.zeros(0, np.int64)
        settled = np.where(matched, np.maximum(cpos, spos[np.where(matched, row, 0)] if servers else cpos),
                           self._rows + cpos)
        present = [(int(settled[code == c].min()), c) for c in range(len(names)) if (code == c).any()]
        causes = {names[c]: int((code == c).sum()) for _, c in sorted(present)}
        unmatched: dict[str, dict[str, int]] = {}
        if (clients_alone := int(n - matched.sum())):
            unmatched["client"] = {"no_server_record": clients_alone}
        if (alone := self.servers - int(matched.sum())):
            unmatched["server"] = {"no_client_record": alone}
        prof = np.concatenate([b.phase for b in clients]) == _PHASE_CODE["profiling"] if clients else np.zeros(0, bool)
        keep = ok & prof
        times = np.concatenate([b.times for b in servers], axis=1) if servers else np.zeros((3, 0))
        picked = times[:, row[keep]]
        columns = {
            "request_latency_ms": np.concatenate([b.latency for b in clients])[keep] if clients else np.zeros(0),
            # Over the kept rows at once, not a block at a time (five steps a block).
            "client_lifecycle_ms": _lifecycle_ms(np.concatenate([b.start for b in clients])[keep],
                                                 np.concatenate([b.end for b in clients])[keep])
                                   if clients else np.zeros(0),
            "handler_ms": picked[0], "model_call_ms": picked[1], "worker_roundtrip_ms": picked[2],
        }
        latency = {name: summarize_array(columns[name]) for name in TIMING_FIELDS}
        return ColumnAnswer(n, int(ok.sum()), causes, unmatched, latency)
