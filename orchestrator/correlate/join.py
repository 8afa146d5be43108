"""Join each request's client record(s) and server record by X-Request-ID, and account every window. `Joiner`
is the pure core (no bus, no clock: callers pass monotonic `now_ns`), reused by ingest and benchmarks;
correlate/live.py runs it as a lossless bus subscriber. Neither reads files nor starts processes."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

import msgspec

from orchestrator.events import (
    ClientRecord,
    Event,
    RequestCorrelated,
    RequestsInFlight,
    RequestUnmatched,
    ServerRecord,
)
from orchestrator.judge.accounting import WindowTally, category_of, cause_of, never_connected

__all__ = ["KeyParser", "Joiner", "JoinerStatistics"]

KeyParser = Callable[[str], tuple[str, str]]
_fields = ClientRecord.__struct_fields__
_EMPTY = (None, "")
_NO_AUDIO = (None, None)
# Launch times and closed names remembered for server-half attribution: a straggler is never older
# than a few windows, and the memory stays bounded over any soak length.
_WINDOWS_KEPT = 64


class JoinerStatistics(msgspec.Struct, frozen=True):
    open_clients: int
    open_servers: int
    settled: int
    correlated: int
    unmatched: int
    duplicates: int


class _Open:
    __slots__ = ("client", "vias", "seen_ns", "server")

    def __init__(self, client: ClientRecord, via: str, seen_ns: int, server: ServerRecord | None = None) -> None:
        self.client, self.vias, self.seen_ns = client, {via}, seen_ns
        # Set when the server half is here but the client half still lacks the answer text.
        self.server = server


def _lacks_answer(client: ClientRecord) -> bool:
    """A successful request known only from the export (which carries no response text): the tap's
    record with the answer is due within milliseconds, so settling now would publish no answer."""
    return client.answer is None and client.via == "export" and not client.error_type \
        and not client.was_cancelled and client.status_code in (None, 200)


# A settled id's entry: (window, vias, has_server). A tuple of strings and a bool, not an object with a
# set: the cyclic GC stops tracking it, so a million settled ids cost no collection time.
_Settled = tuple[str, tuple[str, ...], bool]


_IN_FLIGHT_RULE = ("sent before the server exited, on a connection that then broke or got no answer; "
                   "a refused connection is `connection`, whatever the timing")


class _Crash:
    __slots__ = ("incarnation", "ns", "publish_at", "ids", "spans", "published", "announced", "limit", "breach")

    def __init__(self, incarnation: int, ns: int, publish_at: int, limit: int = 0) -> None:
        self.incarnation, self.ns, self.publish_at = incarnation, ns, publish_at
        self.ids: list[str] = []
        self.spans: list[tuple[int, int]] = []  # (start, end) of each id, client clock
        self.published = 0
        self.announced = False
        self.limit = limit  # the client's concurrency (0: unknown or rate mode)
        self.breach = False

    def add(self, rid: str, start: int, end: int) -> int:
        """Count `rid` as lost to this crash; returns how many of its requests were open at one instant
        within the new one's span. A process takes a while to die: a slot freed by a broken connection is
        refilled at once and the new request can still reach the dying socket, so more than `limit` ids
        is possible, but never more than `limit` open together (a closed-loop client's invariant)."""
        self.ids.append(rid)
        self.spans.append((start, end))
        points = [s for s, _ in self.spans if start <= s <= end]
        return max(sum(1 for s, e in self.spans if s <= p <= e) for p in points)


def _merge(first: ClientRecord, other: ClientRecord) -> ClientRecord:
    """Fill `first`'s empty fields from `other` (the tap has the answer, the export has all metrics)."""
    fill = {}
    for name in _fields:
        if getattr(first, name) in _EMPTY:
            value = getattr(other, name)
            if value not in _EMPTY:
                fill[name] = value
    return msgspec.structs.replace(first, **fill) if fill else first


class Joiner:
    """The join and the accounting, as plain method calls that return the events to publish.

    Open halves wait `match_timeout_s` for their other half (checked by `expire(now_ns)`); settled
    ids are kept until their window closes (duplicates and late halves are recognised), at most
    `max_settled` of them. Not thread-safe; no awaits anywhere.
    """

    def __init__(self, *, key_parser: KeyParser | None = None, match_timeout_s: float = 5.0,
                 crash_slack_s: float = 1.0, crash_lookback_s: float = 10.0, max_settled: int = 1_000_000,
                 source: str = "correlator", answer_grace_s: float = 0.0, cut_by_time: bool = False) -> None:
        self.key_parser = key_parser
        # True (a soak): a client record counts in the window started last at or before its request's
        # start, whatever its load client named (windows are time cuts of one load).
        self.cut_by_time = cut_by_time
        self.match_timeout_ns = int(match_timeout_s * 1e9)
        self.crash_slack_ns = int(crash_slack_s * 1e9)
        # The exit is seen late when the observer is starved of CPU: a connection that broke after the
        # incarnation's last answer, up to this long before the exit was seen, broke on the dying server.
        self.crash_lookback_ns = int(crash_lookback_s * 1e9)
        self._last_answer: dict[int, int] = {}  # incarnation -> latest server record end (unix ns)
        self.max_settled = max_settled
        self.source = source
        # > 0 when the live tap runs: an ok export half waits this long for the tap half with the answer.
        self.answer_grace_ns = int(answer_grace_s * 1e9)
        self._awaiting: dict[str, int] = {}
        self.window = ""
        self._clients: dict[str, _Open] = {}
        self._servers: dict[str, tuple[ServerRecord, int]] = {}
        self._settled: dict[str, _Settled] = {}
        self._tallies: dict[str, WindowTally] = {}
        self._crashes: list[_Crash] = []
        self._keys: dict[str, tuple[str, str]] = {}
        self._starts: deque[tuple[int, str]] = deque(maxlen=_WINDOWS_KEPT)
        self._limits: dict[str, int] = {}
        self._bound = 0  # bound_in_flight's: windows started without their own concurrency take it
        self._closed: deque[str] = deque(maxlen=_WINDOWS_KEPT)
        # Windows closed on time with requests possibly still open (close_window(carry=True)): their
        # stragglers are carried into the oldest open window, by design, not as a problem.
        self._carrying: deque[str] = deque(maxlen=_WINDOWS_KEPT)
        self.correlated = self.unmatched = self.duplicates = 0

    # ------------------------------------------------------------------ inputs

    def _awaits_answer(self, client: ClientRecord) -> bool:
        return self.answer_grace_ns > 0 and _lacks_answer(client)

    def start_window(self, window: str, start_unix_ns: int | None = None, *, concurrency: int = 0) -> None:
        """Server records without a client record are accounted to the window started last before the
        server began them when `start_unix_ns` (the load client's launch) is given, else to the window
        started last. With launch times, a straggler of window N that reaches the server's records after
        N+1 was launched still counts in N, so windows may overlap in their finalisation.
        `concurrency` (0: the bound set by `bound_in_flight`, else none) bounds how many requests a crash can
        have in flight."""
        self.window = window
        self._limits[window] = concurrency or self._bound
        if len(self._limits) > _WINDOWS_KEPT:
            del self._limits[next(iter(self._limits))]
        if window in self._closed:  # a name reused after its close (qualify's runs): a new window
            self._closed.remove(window)
        self._tally(window)
        if start_unix_ns is not None:
            self._starts.append((start_unix_ns, window))

    def client_window(self, client: ClientRecord) -> str:
        """The window a client record counts in: the one it names, or its time cut (see cut_by_time); a
        cut already closed gives the oldest open window (every request counts once; _settle notes it)."""
        if not self.cut_by_time or not self._starts:
            return client.aiperf_run or self.window
        return cut if (cut := self._cut(client)) not in self._closed else next(
            (w for _, w in self._starts if w not in self._closed), self.window)

    def _cut(self, client: ClientRecord) -> str:
        at = client.request_start_ns or client.credit_issued_ns or client.ts_ns
        return next((w for start, w in reversed(self._starts) if start <= at), self._starts[0][1])

    def discard_window(self, window: str) -> bool:
        """Forget a window started ahead but never reached (nothing counted or pending); whether it was."""
        t = self._tallies.get(window)
        if (t is not None and (t.counts or t.problems or t.duplicates or t.server_without_client)) or any(
                self.client_window(p.client) == window for p in self._clients.values()):
            return False
        self._tallies.pop(window, None)
        self._starts = deque(((at, w) for at, w in self._starts if w != window), maxlen=_WINDOWS_KEPT)
        if self.window == window:
            self.window = self._starts[-1][1] if self._starts else ""
        return True

    def server_window(self, rec: ServerRecord) -> str:
        """The window a server record belongs to when no client record names it (see start_window)."""
        # trtmc-server's records carry no end time: the bus stamp (the record was read within ms of being
        # written, after the response body ended) stands in for it.
        end = rec.end_unix_ns or rec.ts_ns
        if not self._starts or not end:
            return self.window
        # When the server began the request; without handler_ms its end (a straggler then may land late).
        begun = end - int(rec.handler_ms * 1e6) if rec.handler_ms else end
        for start, window in reversed(self._starts):
            if start <= begun:
                return window
        return self._starts[0][1]

    def add_client(self, rec: ClientRecord, now_ns: int = 0) -> list[Event]:
        rid = rec.request_id
        settled = self._settled.get(rid)
        if settled is not None:
            window, vias, has_server = settled
            if rec.via in vias:
                return [self._duplicate(rid, "client", window, rec)]
            # The other source describing the same request: merged, not counted.
            self._settled[rid] = (window, (*vias, rec.via), has_server)
            return []
        pending = self._clients.get(rid)
        if pending is not None:
            if rec.via in pending.vias:
                return [self._duplicate(rid, "client", self.client_window(rec), rec)]
            pending.client = _merge(pending.client, rec)
            pending.vias.add(rec.via)
            if pending.server is not None and not self._awaits_answer(pending.client):
                del self._clients[rid]
                self._awaiting.pop(rid, None)
                return [self._settle(pending.client, tuple(pending.vias), pending.server)]
            return []
        server = self._servers.pop(rid, None)
        if server is not None and not self._awaits_answer(rec):
            return [self._settle(rec, (rec.via,), server[0])]
        self._clients[rid] = _Open(rec, rec.via, now_ns, server[0] if server is not None else None)
        if server is not None:
            self._awaiting[rid] = now_ns + self.answer_grace_ns
        return []

    def add_server(self, rec: ServerRecord, now_ns: int = 0) -> list[Event]:
        rid = rec.request_id
        settled = self._settled.get(rid)
        if settled is not None:
            if settled[2]:
                return [self._duplicate(rid, "server", settled[0], None)]
            tally = self._tally(settled[0])
            if len(tally.problems) < 50:
                tally.problems.append(f"server record of {rid} arrived after the request was settled "
                                      "without it (raise match_timeout_s)")
            return []
        if rid in self._servers:
            return [self._duplicate(rid, "server", self.server_window(rec), None)]
        self._answered(rec)
        pending = self._clients.get(rid)
        if pending is not None:
            if pending.server is not None:
                return [self._duplicate(rid, "server", self.client_window(pending.client), None)]
            if self._awaits_answer(pending.client):
                pending.server = rec
                self._awaiting[rid] = now_ns + self.answer_grace_ns
                return []
            del self._clients[rid]
            return [self._settle(pending.client, tuple(pending.vias), rec)]
        self._servers[rid] = (rec, now_ns)
        return []

    def add_clients(self, recs: Iterable[ClientRecord], now_ns: int = 0) -> list[Event]:
        """`add_client` for each record, in order; the events of all of them (ingest's bulk path).

        The common case (a first client half whose server half is waiting, or none is) is handled
        here without the per-record call; everything else goes through `add_client`."""
        out: list[Event] = []
        clients, settled, servers_pop, settle = self._clients, self._settled, self._servers.pop, self._settle
        grace = self.answer_grace_ns > 0
        for rec in recs:
            rid = rec.request_id
            if rid in clients or rid in settled or (grace and _lacks_answer(rec)):
                out += self.add_client(rec, now_ns)
                continue
            server = servers_pop(rid, None)
            if server is None:
                clients[rid] = _Open(rec, rec.via, now_ns)
            else:
                out.append(settle(rec, (rec.via,), server[0]))
        return out

    def add_servers(self, recs: Iterable[ServerRecord], now_ns: int = 0) -> list[Event]:
        """`add_server` for each record, in order; the events of all of them (ingest's bulk path)."""
        out: list[Event] = []
        clients, settled, servers, last = self._clients, self._settled, self._servers, self._last_answer
        for rec in recs:
            rid = rec.request_id
            if rid in clients or rid in settled or rid in servers:
                out += self.add_server(rec, now_ns)
            else:
                servers[rid] = (rec, now_ns)
                end = rec.end_unix_ns
                if end is not None and end > last.get(rec.incarnation, 0):
                    last[rec.incarnation] = end
        return out

    def bound_in_flight(self, limit: int) -> None:
        """How many requests the load client can have open at once (a soak's AIPerf run, whose windows are
        cut by time): the bound of the window open now and of those started later without their own."""
        self._bound = limit
        if self.window:
            self._limits[self.window] = limit

    def _answered(self, rec: ServerRecord) -> None:
        end = rec.end_unix_ns
        if end is not None and end > self._last_answer.get(rec.incarnation, 0):
            self._last_answer[rec.incarnation] = end

    def server_exited(self, incarnation: int, crash_unix_ns: int, now_ns: int = 0) -> list[Event]:
        """An unexpected exit at `crash_unix_ns` (when the process was seen dead): a failed request sent
        before it on a connection that broke or got no answer becomes server_crash; a refused one stays
        `connection`. The ids are published as RequestsInFlight once their client records had time to arrive."""
        self._crashes.append(_Crash(incarnation, crash_unix_ns, now_ns + 2 * self.match_timeout_ns,
                                    self._limits.get(self.window, 0)))
        return []

    # ------------------------------------------------------------------ time and ends

    def expire(self, now_ns: int, *, final: bool = False) -> list[Event]:
        """Settle halves that waited longer than the match timeout (a server half once its window has closed, or
        `final`); publish due crash lists."""
        out: list[Event] = []
        while self._awaiting:  # complete but for the answer, past the grace: settle without it
            rid, due = next(iter(self._awaiting.items()))
            if due > now_ns:
                break
            del self._awaiting[rid]
            pending = self._clients.pop(rid, None)
            if pending is not None and pending.server is not None:
                out.append(self._settle(pending.client, tuple(pending.vias), pending.server))
        limit = now_ns - self.match_timeout_ns
        while self._clients:
            rid, pending = next(iter(self._clients.items()))
            if pending.seen_ns > limit:
                break  # insertion order is arrival order: the rest are younger
            del self._clients[rid]
            if pending.server is not None:  # the answer never came: settle without it
                self._awaiting.pop(rid, None)
                out.append(self._settle(pending.client, tuple(pending.vias), pending.server))
                continue
            out.append(self._unmatched(rid, "client", "no_server_record", pending.client))
            out.append(self._settle(pending.client, tuple(pending.vias), None))
        # A server half waits for its client half while its window is open: on a starved machine the load
        # client's records lag the server's by many seconds (AIPerf's record pipeline: 18 s seen with both cores
        # busy), and the window's close accounts whatever is still alone. Once that window has closed (carried
        # on), or at the end of input (`final`), the match timeout applies.
        for rid, (server, seen) in list(self._servers.items()):
            window = self.server_window(server)
            if seen > limit or (not final and window not in self._closed):
                continue
            del self._servers[rid]
            out.extend(self._server_only(rid, window))
        for crash in self._crashes:
            if crash.publish_at <= now_ns:
                out.extend(self._crash_list(crash))
        return out

    def idle(self) -> bool:  # nothing waits on time: no open half, no answer grace, no crash list
        return not (self._clients or self._servers or self._awaiting or self._crashes)

    def open_clients(self, window: str | None = None) -> int:
        if window is None:
            return len(self._clients)
        return sum(1 for p in self._clients.values() if self.client_window(p.client) == window)

    def flush(self) -> list[Event]:
        """Settle every open half as unmatched and publish every crash list (end of input)."""
        out = self.expire(1 << 62, final=True)
        for crash in self._crashes:
            out.extend(self._crash_list(crash))
        return out

    def close_window(self, window: str, *, expected: dict[str, int] | None = None,
                     expected_from: dict[str, str] | None = None, carry: bool = False) -> list[Event]:
        """End `window`: its still-open client halves count as in flight (a breach), open server
        halves as server-without-client; returns those events, crash lists and AccountingChecked last.
        Forgets the window's settled ids. `carry` (a soak's window closed on time, cut_by_time, while a
        later window is open): its open halves stay open and, once settled, count in the oldest open
        window as `carried` (each request still counts once), not as a breach; its settled ids are kept
        until the next close, so a late half from the other source is merged."""
        out: list[Event] = []
        if carry:
            self._carrying.append(window)
        in_flight = [] if carry else [rid for rid, p in self._clients.items() if self.client_window(p.client) == window]
        for rid in list(in_flight):
            pending = self._clients.pop(rid)
            if pending.server is not None:  # complete but for the answer text: not in flight
                self._awaiting.pop(rid, None)
                in_flight.remove(rid)
                out.append(self._settle(pending.client, tuple(pending.vias), pending.server))
                continue
            out.append(self._unmatched(rid, "client", "timeout", pending.client))
            out.append(self._settle(pending.client, tuple(pending.vias), None, in_flight=True))
        for rid, (server, _) in list(self._servers.items()):
            if not carry and self.server_window(server) == window:
                del self._servers[rid]
                out.extend(self._server_only(rid, window))
        for crash in self._crashes:
            out.extend(self._crash_list(crash))
        tally = self._tallies.pop(window, None) or WindowTally(window)
        out.append(tally.check(expected=expected, expected_from=expected_from, in_flight_ids=in_flight))
        # A window closed on time keeps its settled ids until the next close: the other source's half of a
        # request it settled (the export's, just after the tap's) is then merged, not counted again.
        stale = {w for w in self._carrying if w != window} | (set() if carry else {window})
        self._settled = {k: v for k, v in self._settled.items() if v[0] not in stale}
        self._closed.append(window)
        return out

    def statistics(self) -> JoinerStatistics:
        return JoinerStatistics(open_clients=len(self._clients), open_servers=len(self._servers),
                                settled=len(self._settled), correlated=self.correlated,
                                unmatched=self.unmatched, duplicates=self.duplicates)

    # ------------------------------------------------------------------ internals

    def _tally(self, window: str) -> WindowTally:
        tally = self._tallies.get(window)
        if tally is None:
            tally = self._tallies[window] = WindowTally(window)
        return tally

    def _remember(self, rid: str, settled: _Settled) -> None:  # _settle inlines this
        self._settled[rid] = settled
        if len(self._settled) > self.max_settled:
            del self._settled[next(iter(self._settled))]  # oldest first: bounded memory over long soaks

    def _key(self, conversation_id: str) -> tuple[str, str]:
        if not conversation_id or self.key_parser is None:
            return "", ""
        known = self._keys.get(conversation_id)
        if known is None:
            try:
                known = self.key_parser(conversation_id)
            except Exception:  # a foreign session id maps to no item; the event keeps conversation_id
                known = ("", "")
            if len(self._keys) < 100_000:
                self._keys[conversation_id] = known
        return known

    def _crash_rule(self, client: ClientRecord, server: ServerRecord | None,
                    category: str) -> tuple[_Crash | None, str]:
        """The crash that had this failed request in flight (or None) and the rule that decided it:
        "open_at_exit", "refused" or "sent_after_exit"; "" when no exit is involved."""
        start = client.request_start_ns
        if start is None or category not in ("transport_error", "timeout"):
            return None, ""  # answered (even with an HTTP error) or cancelled: never lost to a crash
        refused = never_connected(client)
        end = client.request_end_ns if client.request_end_ns and client.request_end_ns > start else None
        after: _Crash | None = None
        for crash in self._crashes:
            if server is not None:
                if server.incarnation != crash.incarnation:
                    continue
                if server.end_unix_ns and server.end_unix_ns < crash.ns - self.crash_slack_ns:
                    continue
            # An error record's end may equal its start (AIPerf): then the end is unknown.
            if start <= crash.ns and (end is None or end >= self._broke_since(crash)):
                return (None, "refused") if refused else (crash, "open_at_exit")
            if start > crash.ns:
                after = crash
        if after is not None:
            return None, "refused" if refused else "sent_after_exit"
        return None, ""

    def _broke_since(self, crash: _Crash) -> int:
        """The earliest end of a request that broke on this dying incarnation: the slack before the exit
        was seen, or back to the incarnation's last answer when that is earlier (within the lookback)."""
        since = crash.ns - self.crash_slack_ns
        last = self._last_answer.get(crash.incarnation)
        if last is not None and last < since:
            since = max(last, crash.ns - self.crash_lookback_ns)
        return since

    def _settle(self, client: ClientRecord, vias: tuple[str, ...], server: ServerRecord | None, *,
                in_flight: bool = False) -> RequestCorrelated:
        # The per-request hot path of ingest (a million calls): lookups are local and the event is
        # built with the keywords that can differ from their defaults only (msgspec's cost grows
        # with the keywords given).
        rid = client.request_id
        window = client.aiperf_run or self.window
        if self.cut_by_time and self._starts and (cut := self._cut(client)) != (window := self.client_window(client)):
            if cut in self._carrying:
                self._tally(window).carried += 1
            else:
                self._tally(window).problems.append(f"request {rid} started in {cut}, closed before it ended; "
                                                    "counted here")
        status = client.status_code
        crash: _Crash | None = None
        rule = ""
        if (server is not None and (status is None or status < 400) and client.error_code is None
                and not client.error_message and not client.error_type and not client.was_cancelled):
            category = cause = "ok"  # what category_of and cause_of say for an answered request
        else:
            category = category_of(client)
            if self._crashes:
                crash, rule = self._crash_rule(client, server, category)
            cause = cause_of(client, server, crashed=crash is not None, category=category)
        if in_flight:
            category = "in_flight"
        tally = self._tallies.get(window) or self._tally(window)
        counts, key = tally.counts, (client.phase, category, cause)
        counts[key] = counts.get(key, 0) + 1
        if server is None:
            tally.client_only(rid, ok=category == "ok")
        if crash is not None and cause == "server_crash":
            opened = client.request_start_ns or 0
            # An error record's end may equal its start (AIPerf): then it was open until the exit was seen.
            broke = client.request_end_ns if client.request_end_ns and client.request_end_ns > opened else crash.ns
            together = crash.add(rid, opened, broke)
            if crash.limit and together > crash.limit and not crash.breach:
                # At most `concurrency` requests can be open at one instant: more means the rule is wrong.
                crash.breach = True
                tally.problems.append(
                    f"more requests in flight at one instant at the exit of incarnation {crash.incarnation} than "
                    f"the client's concurrency {crash.limit} ({together}, e.g. {rid}): the crash accounting is wrong")
        settled = self._settled
        settled[rid] = (window, vias, server is not None)
        if len(settled) > self.max_settled:
            del settled[next(iter(settled))]  # oldest first: bounded memory over long soaks
        self.correlated += 1
        conversation_id = client.conversation_id
        item_key = self._keys.get(conversation_id) if conversation_id else None
        item_id, arm = item_key if item_key is not None else self._key(conversation_id)
        start, end = client.request_start_ns, client.request_end_ns
        lifecycle = (end - start) / 1e6 if start is not None and end is not None else None
        if server is None:
            return RequestCorrelated(
                source=self.source, request_id=rid, window=window, phase=client.phase,
                conversation_id=conversation_id, item_id=item_id, arm=arm, ok=cause == "ok", cause=cause,  # type: ignore[arg-type]
                http_status=status, error_message=client.error_message, answer=client.answer,
                request_start_ns=start, request_end_ns=end, request_latency_ms=client.request_latency_ms,
                client_lifecycle_ms=lifecycle, incarnation=crash.incarnation if crash is not None else 0,
                has_server=False, cause_rule=rule,
            )
        audio = server.audio
        seconds, size = (audio.seconds, audio.bytes) if audio is not None else _NO_AUDIO
        return RequestCorrelated(
            source=self.source, request_id=rid, window=window, phase=client.phase,
            conversation_id=conversation_id, item_id=item_id, arm=arm, ok=cause == "ok", cause=cause,  # type: ignore[arg-type]
            http_status=status if status is not None else server.status, error_message=client.error_message,
            answer=client.answer, request_start_ns=start, request_end_ns=end,
            request_latency_ms=client.request_latency_ms, client_lifecycle_ms=lifecycle,
            handler_ms=server.handler_ms, worker_roundtrip_ms=server.worker_roundtrip_ms,
            model_call_ms=server.model_call_ms, timing_scope=server.timing_scope,
            incarnation=server.incarnation, audio_seconds=seconds, audio_bytes=size, cause_rule=rule,
            completion_tokens=server.completion_tokens,
        )

    def _server_only(self, rid: str, window: str) -> list[Event]:
        # A straggler of a window already closed is journaled under it but tallied nowhere: its
        # accounting is published, and a tally recreated for it would never be checked or freed.
        if window in self._carrying:  # a carried straggler without its client half: a breach where carried
            window = next((w for _, w in self._starts if w not in self._closed), self.window)
        if window not in self._closed:
            self._tally(window).server_only(rid)
            self._remember(rid, (window, (), True))
        return [self._unmatched(rid, "server", "no_client_record", None, window)]

    def _unmatched(self, rid: str, half: str, cause: str, client: ClientRecord | None,
                   window: str = "") -> RequestUnmatched:
        self.unmatched += 1
        return RequestUnmatched(source=self.source, request_id=rid, half=half, cause=cause,  # type: ignore[arg-type]
                                window=(self.client_window(client) if client else "") or window or self.window,
                                phase=client.phase if client else "unknown",
                                conversation_id=client.conversation_id if client else "")

    def _duplicate(self, rid: str, half: str, window: str, client: ClientRecord | None) -> RequestUnmatched:
        self.duplicates += 1
        if window not in self._closed:
            self._tally(window).duplicate(rid)
        return self._unmatched(rid, half, "duplicate_id", client, window)

    def _crash_list(self, crash: _Crash) -> list[Event]:
        new = crash.ids[crash.published:]
        if crash.announced and not new:
            return []
        crash.announced, crash.published = True, len(crash.ids)
        # Announced once even when empty (the crash had nothing in flight); later ids follow.
        return [RequestsInFlight(source=self.source, incarnation=crash.incarnation, request_ids=list(new),
                                 limit=crash.limit, rule=_IN_FLIGHT_RULE)]




