"""Unit tests of the pure join core and the bus correlator on synthetic record streams."""

from __future__ import annotations

import time

import anyio
import pytest

from orchestrator.correlate import Correlator, Joiner
from orchestrator.correlate.live import in_flight_bound
from orchestrator.events import (
    AccountingChecked,
    AiperfStarted,
    AudioFacts,
    ClientRecord,
    RequestCorrelated,
    RequestsInFlight,
    RequestUnmatched,
    ServerExited,
    ServerRecord,
    Warned,
)
from orchestrator.qualify.collect import WindowCollector
from orchestrator.spine.bus import Bus

S = 1_000_000_000
T0 = 1_800_000_000 * S


def parse_key(key: str) -> tuple[str, str]:
    item, _, arm = key.rpartition(".")
    if not item:
        raise ValueError(key)
    return item, arm


def client(rid: str, *, via: str = "export", phase: str = "profiling", conv: str = "count-3.audio",
           status: int | None = 200, start: int = T0, end: int | None = None, error: str = "",
           error_type: str = "", session: int = 0, answer: str | None = None, window: str = "w1") -> ClientRecord:
    return ClientRecord(request_id=rid, via=via, aiperf_run=window, phase=phase, conversation_id=conv,  # type: ignore[arg-type]
                        session_num=session, status_code=status, request_start_ns=start,
                        request_end_ns=end if end is not None else start + S // 10,
                        error_code=status if status and status >= 400 else None, error_message=error,
                        error_type=error_type, request_latency_ms=100.0, answer=answer)


def server(rid: str, *, status: int = 200, incarnation: int = 1, end: int = T0 + S // 10,
           error_code: str = "") -> ServerRecord:
    return ServerRecord(request_id=rid, status=status, handler_ms=50.0, worker_roundtrip_ms=40.0,
                        model_call_ms=30.0, timing_scope="public_task_call_wall", incarnation=incarnation,
                        end_unix_ns=end, error_code=error_code, audio=AudioFacts(seconds=2.5, bytes=80044))


def only(events: list, kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


class TestJoiner:
    def test_client_first_then_server_correlates_once(self) -> None:
        """A client half waits for its server half; the pair yields one event with both timings."""
        j = Joiner(key_parser=parse_key)
        assert j.add_client(client("a")) == []
        [ev] = j.add_server(server("a"))
        assert isinstance(ev, RequestCorrelated)
        assert (ev.ok, ev.cause, ev.item_id, ev.arm, ev.model_call_ms) == (True, "ok", "count-3", "audio", 30.0)
        assert ev.client_lifecycle_ms == pytest.approx(100.0) and ev.audio_seconds == 2.5

    def test_server_first_then_client(self) -> None:
        """A server half arriving first is held until its client half comes."""
        j = Joiner(key_parser=parse_key)
        assert j.add_server(server("a")) == []
        [ev] = j.add_client(client("a"))
        assert ev.has_server and ev.handler_ms == 50.0

    def test_tap_and_export_merge_without_double_count(self) -> None:
        """The tap and the export describe one request: merged (answer kept), counted once."""
        j = Joiner(key_parser=parse_key)
        j.add_client(client("a", via="tap", answer="3"))
        j.add_client(client("a", via="export"))
        [ev] = j.add_server(server("a"))
        assert ev.answer == "3"
        assert j.add_client(client("b", via="tap")) == []
        j.add_server(server("b"))
        assert j.add_client(client("b", via="export")) == []  # late second source after settling
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert acc.balanced and acc.issued == {"profiling": 2}, acc.problems

    def test_out_of_order_many(self) -> None:
        """Interleaved halves in arbitrary order all join; accounting balances."""
        j = Joiner(key_parser=parse_key)
        out = []
        ids = [f"r{i}" for i in range(50)]
        for rid in ids[::2]:
            out += j.add_server(server(rid))
        for rid in reversed(ids):
            out += j.add_client(client(rid))
        for rid in ids[1::2]:
            out += j.add_server(server(rid))
        assert sorted(e.request_id for e in only(out, RequestCorrelated)) == sorted(ids)
        [acc] = only(j.close_window("w1", expected={"profiling": 50}), AccountingChecked)
        assert acc.balanced and acc.by_category["profiling"]["ok"] == 50

    def test_duplicates_are_flagged_and_break_balance(self) -> None:
        """The same id twice from one source, or two server records, is a duplicate and a breach."""
        j = Joiner()
        j.add_client(client("a"))
        j.add_server(server("a"))
        [dup] = j.add_client(client("a"))
        assert isinstance(dup, RequestUnmatched) and dup.cause == "duplicate_id"
        [dup2] = j.add_server(server("a"))
        assert dup2.half == "server"
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert not acc.balanced and acc.duplicates == ["a", "a"]
        assert "2 duplicate request ids" in acc.problems

    def test_missing_halves_time_out_with_causes(self) -> None:
        """An unpaired client half waits the match timeout, then becomes unmatched with its cause; a server half
        waits for its window's close (the load client's records may lag the server's by many seconds)."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1")
        j.add_client(client("c", status=None, error="Cannot connect to host", error_type="ClientConnectorError"), 0)
        j.add_server(server("s"), 0)
        assert j.expire(S // 2) == []
        out = j.expire(2 * S)
        unmatched = {(e.request_id, e.half, e.cause) for e in only(out, RequestUnmatched)}
        assert unmatched == {("c", "client", "no_server_record")}
        [ev] = only(out, RequestCorrelated)
        assert (ev.cause, ev.has_server, ev.ok) == ("connection", False, False)
        closing = j.close_window("w1")
        assert {(e.request_id, e.half, e.cause) for e in only(closing, RequestUnmatched)} == \
            {("s", "server", "no_client_record")}
        [acc] = only(closing, AccountingChecked)
        assert acc.server_without_client == ["s"] and acc.client_without_server == ["c"]
        assert acc.problems == ["1 server records without a client record"]

    def test_a_client_half_that_lags_its_server_half_by_long_still_pairs_in_an_open_window(self) -> None:
        """Both cores busy, AIPerf's record of a request reached aqbench 18 s after the server's: while the
        window is open the server half waits, so the pair is one answered request and the window balances
        (it read server-without-client, and the client record was then dropped as a merged duplicate)."""
        j = Joiner(match_timeout_s=5.0)
        j.start_window("w1")
        j.add_server(server("a"), 0)
        assert only(j.expire(10 * S), RequestUnmatched) == []
        [ev] = only(j.add_client(client("a"), 18 * S), RequestCorrelated)
        assert ev.ok and ev.has_server
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert acc.balanced and acc.server_without_client == [] and acc.issued == {"profiling": 1}

    def test_flush_settles_a_lone_server_half_of_an_open_window(self) -> None:
        """At the end of input nothing waits: a server half alone in an open window is unmatched."""
        j = Joiner(match_timeout_s=5.0)
        j.start_window("w1")
        j.add_server(server("s"), 0)
        assert {(e.request_id, e.cause) for e in only(j.flush(), RequestUnmatched)} == {("s", "no_client_record")}

    def test_answered_request_without_server_record_is_a_breach(self) -> None:
        """An answered request whose server record never came is listed and unbalances the window."""
        j = Joiner(match_timeout_s=1.0)
        j.add_client(client("a"), 0)
        [ev] = only(j.expire(2 * S), RequestCorrelated)
        assert ev.cause == "unmatched" and not ev.ok
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert not acc.balanced and "1 answered requests without a server record" in acc.problems

    def test_warmup_then_profiling_with_restarted_session_num(self) -> None:
        """session_num restarts after warmup; mapping uses conversation_id and phases are counted apart."""
        j = Joiner(key_parser=parse_key)
        out = []
        for i, conv in enumerate(["a-1.audio", "b-2.silence"]):
            out += j.add_client(client(f"w{i}", phase="warmup", conv=conv, session=i))
            out += j.add_server(server(f"w{i}"))
        for i, conv in enumerate(["b-2.silence", "a-1.audio", "c-3.transcript"]):
            out += j.add_client(client(f"p{i}", phase="profiling", conv=conv, session=i))
            out += j.add_server(server(f"p{i}"))
        got = {(e.request_id, e.phase, e.item_id, e.arm) for e in only(out, RequestCorrelated)}
        assert ("p0", "profiling", "b-2", "silence") in got and ("w0", "warmup", "a-1", "audio") in got
        [acc] = only(j.close_window("w1", expected={"warmup": 2, "profiling": 3}), AccountingChecked)
        assert acc.balanced and acc.issued == {"warmup": 2, "profiling": 3}

    def test_expected_count_mismatch_is_a_breach(self) -> None:
        """If AIPerf issued more requests than were seen, the accounting says so."""
        j = Joiner()
        j.add_client(client("a"))
        j.add_server(server("a"))
        [acc] = only(j.close_window("w1", expected={"profiling": 2}), AccountingChecked)
        assert acc.problems == ["profiling: AIPerf issued 2 requests, 1 were seen and accounted"]

    def test_requests_aiperf_sent_and_lost_are_named_with_the_count_source(self) -> None:
        """AIPerf's log says it sent 3, one record came: a breach naming the 2 lost and where 3 comes from;
        a manifest's count (records kept) names its file and claims no loss."""
        j = Joiner()
        j.add_client(client("a"))
        j.add_server(server("a"))
        [acc] = only(j.close_window("w1", expected={"profiling": 3}, expected_from={"profiling": "aiperf_log"}),
                     AccountingChecked)
        assert not acc.balanced and acc.expected_from == {"profiling": "aiperf_log"}
        assert acc.problems == ["profiling: AIPerf issued 3 requests (its log's sending-complete line), 1 were seen "
                                "and accounted: 2 request(s) it sent left no record in its export or live tap"]
        j = Joiner()
        j.add_client(client("a"))
        j.add_server(server("a"))
        [acc] = only(j.close_window("w1", expected={"profiling": 3}, expected_from={"profiling": "phase_manifest"}),
                     AccountingChecked)
        assert acc.problems == ["profiling: AIPerf issued 3 requests (phase_manifest.json), 1 were seen and accounted"]

    def test_http_causes(self) -> None:
        """4xx, 5xx and 429 map to http_4xx, http_5xx and server_busy; timeouts and cancels too."""
        j = Joiner(match_timeout_s=1.0)
        cases = {"a": (400, "http_4xx"), "b": (500, "http_5xx"), "c": (429, "server_busy"), "d": (503, "http_5xx")}
        causes = {}
        for rid, (status, _) in cases.items():
            j.add_client(client(rid, status=status, error="boom"))
            [ev] = j.add_server(server(rid, status=status))
            causes[rid] = ev.cause
        assert causes == {rid: want for rid, (_, want) in cases.items()}
        j.add_client(client("t", status=None, error="Request timed out", error_type="TimeoutError"), 0)
        j.add_client(ClientRecord(request_id="x", aiperf_run="w1", phase="profiling", was_cancelled=True), 0)
        out = only(j.expire(5 * S), RequestCorrelated)
        assert {e.request_id: e.cause for e in out} == {"t": "timeout", "x": "cancelled"}
        [acc] = only(j.close_window("w1"), AccountingChecked)
        cats = acc.by_category["profiling"]
        assert (cats["http_error"], cats["timeout"], cats["cancelled"]) == (4, 1, 1)
        assert sum(cats.values()) == acc.issued["profiling"] == 6

    def test_crash_with_requests_in_flight(self) -> None:
        """Requests spanning an unexpected exit become server_crash and are listed in RequestsInFlight."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1")
        crash = T0 + 5 * S
        # Finished well before the crash: ok. Spanning the crash with a connection error: server_crash.
        j.add_client(client("before", start=T0, end=T0 + S), 0)
        j.add_server(server("before", end=T0 + S), 0)
        j.add_client(client("inflight1", status=None, error="Server disconnected", start=crash - 2 * S,
                            end=crash + S // 100), 0)
        j.add_client(client("inflight2", status=None, error="Connection reset", start=crash - S // 2,
                            end=crash - S // 2), 0)  # error records may carry end == start
        j.add_client(client("after", status=None, error="Cannot connect", start=crash + 3 * S,
                            end=crash + 3 * S), 0)
        # Answered a moment before the exit (inside the crash slack), its server record read after it:
        # its span covers the crash time, but it was answered, so it is ok and not in flight.
        j.add_client(client("justbefore", start=crash - S // 2, end=crash - S // 4), 0)
        assert j.server_exited(1, crash, 0) == []
        assert only(j.add_server(server("justbefore", end=crash - S // 4), 0), RequestCorrelated)[0].cause == "ok"
        out = j.expire(S + S // 2)
        causes = {e.request_id: e.cause for e in only(out, RequestCorrelated)}
        assert causes == {"inflight1": "server_crash", "inflight2": "server_crash", "after": "connection"}
        assert [e.incarnation for e in only(out, RequestCorrelated) if e.cause == "server_crash"] == [1, 1]
        assert only(out, RequestsInFlight) == []  # announced after twice the match timeout
        [inflight] = only(j.expire(3 * S), RequestsInFlight)
        assert sorted(inflight.request_ids) == ["inflight1", "inflight2"] and inflight.incarnation == 1
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert acc.balanced, acc.problems
        assert acc.by_cause["profiling"] == {"ok": 2, "server_crash": 2, "connection": 1}
        assert acc.by_category["profiling"]["transport_error"] == 3

    def test_refused_is_connection_whatever_the_timing(self) -> None:
        """Only a request sent before the exit on a connection that then broke is server_crash; a refused
        connection is `connection` even when its span covers the exit; each says which rule decided."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1")
        crash = T0 + 5 * S
        refused = ("ClientConnectorError(ConnectionKey(host='127.0.0.1', port=9), ConnectionRefusedError(111, "
                   "\"Connect call failed ('127.0.0.1', 9)\"))")
        j.add_client(client("refused", status=None, error_type="ClientConnectorError", error=refused,
                            start=crash - S // 10, end=crash + S // 10), 0)
        j.add_client(client("reset", status=None, error_type="ClientOSError",
                            error="[Errno 104] Connection reset by peer", start=crash - S, end=crash), 0)
        j.add_client(client("eof", status=None, error_type="ServerDisconnectedError", error="Server disconnected",
                            start=crash - S // 2, end=crash + S // 100), 0)
        j.add_client(client("late", status=None, error_type="ServerDisconnectedError", error="Server disconnected",
                            start=crash + S // 5, end=crash + S // 4), 0)
        j.add_client(client("late_refused", status=None, error_type="ClientConnectorError", error=refused,
                            start=crash + S, end=crash + S), 0)
        j.server_exited(1, crash, 0)
        out = j.expire(3 * S)
        got = {e.request_id: (e.cause, e.cause_rule) for e in only(out, RequestCorrelated)}
        assert got == {"refused": ("connection", "refused"), "reset": ("server_crash", "open_at_exit"),
                       "eof": ("server_crash", "open_at_exit"), "late": ("connection", "sent_after_exit"),
                       "late_refused": ("connection", "refused")}
        [inflight] = only(out, RequestsInFlight)
        assert sorted(inflight.request_ids) == ["eof", "reset"] and "refused" in inflight.rule

    def test_more_in_flight_than_concurrency_is_a_breach(self) -> None:
        """With concurrency 2, three requests lost to one crash cannot be right: the window is unbalanced."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1", T0, concurrency=2)
        crash = T0 + 5 * S
        for i in range(3):
            j.add_client(client(f"r{i}", status=None, error_type="ServerDisconnectedError",
                                error="Server disconnected", start=crash - S // 2, end=crash), 0)
        j.server_exited(1, crash, 0)
        [inflight] = only(j.expire(3 * S), RequestsInFlight)
        assert inflight.limit == 2 and len(inflight.request_ids) == 3
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert not acc.balanced
        assert any("than the client's concurrency 2" in p for p in acc.problems), acc.problems

    def test_a_soaks_time_cut_windows_take_the_runs_bound(self) -> None:
        """Issue 29: a soak's windows are cut by time from one AIPerf run and carry no concurrency of their
        own; the run's bound (bound_in_flight) applies to them, so three requests lost at concurrency 2 breach."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("soak/w0001", T0)
        j.bound_in_flight(in_flight_bound(["aiperf", "profile", "--concurrency", "2"]))
        j.start_window("soak/w0002", T0 + S)
        crash = T0 + 5 * S
        for i in range(3):
            j.add_client(client(f"r{i}", status=None, error_type="ServerDisconnectedError",
                                error="Server disconnected", start=crash - S // 2, end=crash, window="soak/w0002"), 0)
        j.server_exited(1, crash, 0)
        [inflight] = only(j.expire(3 * S), RequestsInFlight)
        assert inflight.limit == 2
        [acc] = only(j.close_window("soak/w0002"), AccountingChecked)
        assert any("than the client's concurrency 2" in p for p in acc.problems), acc.problems

    @pytest.mark.parametrize(("argv", "bound"), [
        (["--concurrency", "2"], 2), (["--concurrency=8", "--request-rate", "5"], 8),
        (["--request-rate", "2", "--request-timeout-seconds", "60", "--arrival-pattern", "constant"], 121),
        (["--request-rate", "2", "--request-timeout-seconds", "60", "--arrival-pattern", "poisson"], 193),
        (["--request-rate", "2"], 0), (["--concurrency", "x"], 0), ([], 0)])
    def test_the_in_flight_bound_is_what_aiperf_could_have_open(self, argv: list[str], bound: int) -> None:
        """Concurrency when given; in rate mode, what the rate starts within one timeout (Poisson bursts
        allowed for), plus one; 0 when the command line cannot tell."""
        assert in_flight_bound(argv) == bound

    def test_slots_refilled_while_the_process_dies_are_not_a_breach(self) -> None:
        """Four requests lost to one crash at concurrency 2, never more than two open together (the first
        two broke, their slots were refilled and the new ones reset by the dying socket): balanced."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1", T0, concurrency=2)
        crash = T0 + 5 * S
        ms = S // 1000
        spans = {"a": (crash - 80 * ms, crash - 40 * ms), "b": (crash - 80 * ms, crash - 30 * ms),
                 "c": (crash - 35 * ms, crash - 20 * ms), "d": (crash - 28 * ms, crash)}
        for rid, (start, end) in spans.items():
            j.add_client(client(rid, status=None, error_type="ClientOSError", error="Connection reset by peer",
                                start=start, end=end), 0)
        j.server_exited(1, crash, 0)
        [inflight] = only(j.expire(3 * S), RequestsInFlight)
        assert sorted(inflight.request_ids) == ["a", "b", "c", "d"]
        [acc] = only(j.close_window("w1"), AccountingChecked)
        assert acc.balanced, acc.problems

    def test_exit_seen_late_still_finds_the_broken_connections(self) -> None:
        """The observer, starved of CPU, sees the exit 3 s after the connections broke: a request that broke
        after the incarnation's last answer is server_crash; one that broke before that answer is not."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1", T0, concurrency=2)
        seen = T0 + 10 * S
        j.add_client(client("answered", start=seen - 5 * S, end=seen - 4 * S), 0)
        j.add_server(server("answered", end=seen - 4 * S), 0)
        j.add_client(client("early", status=None, error_type="ServerDisconnectedError", error="Server disconnected",
                            start=seen - 6 * S, end=seen - 5 * S), 0)
        for rid in ("a", "b"):
            j.add_client(client(rid, status=None, error_type="ServerDisconnectedError", error="Server disconnected",
                                start=seen - 3500 * S // 1000, end=seen - 3 * S), 0)
        j.server_exited(1, seen, 0)
        out = j.expire(3 * S)
        causes = {e.request_id: e.cause for e in only(out, RequestCorrelated)}
        assert causes == {"early": "connection", "a": "server_crash", "b": "server_crash"}

    def test_open_client_at_close_is_in_flight(self) -> None:
        """A client half still open when the window closes counts as in flight: a breach."""
        j = Joiner(match_timeout_s=60)
        j.add_client(client("a"), 0)
        out = j.close_window("w1")
        [acc] = only(out, AccountingChecked)
        assert acc.in_flight == 1 and not acc.balanced
        assert acc.problems[0].startswith("1 requests still in flight at window end: a")

    def test_bad_session_key_keeps_conversation(self) -> None:
        """A conversation id the key parser rejects maps to no item but is kept on the event."""
        j = Joiner(key_parser=parse_key)
        j.add_client(client("a", conv="nodot"))
        [ev] = j.add_server(server("a"))
        assert (ev.item_id, ev.arm, ev.conversation_id) == ("", "", "nodot")

    def test_settled_ids_are_bounded(self) -> None:
        """Settled ids beyond max_settled are forgotten oldest first (bounded memory)."""
        j = Joiner(max_settled=10)
        for i in range(100):
            j.add_client(client(f"r{i}"))
            j.add_server(server(f"r{i}"))
        assert j.statistics().settled == 10


class TestCorrelator:
    @pytest.mark.anyio
    async def test_bus_round_trip_with_crash_and_close(self) -> None:
        """Over a real bus: joins, answers a crash with RequestsInFlight and publishes the accounting."""
        bus = Bus("t")
        seen: list = []
        corr = Correlator(bus, key_parser=parse_key, match_timeout_s=0.2, tick_s=0.02)
        async with anyio.create_task_group() as tg:
            sub = bus.subscribe("probe", size=10_000)

            async def collect() -> None:
                async with sub:
                    async for ev in sub:
                        seen.append(ev)

            tg.start_soon(collect)
            await tg.start(corr.run)
            now = time.time_ns()
            await bus.publish(client("ok1", start=now - S, end=now - S // 2))
            await bus.publish(server("ok1", end=now - S // 2))
            await bus.publish(client("lost", status=None, error="Server disconnected", start=now - S // 10,
                                     end=now + S // 100))
            await bus.publish(ServerExited(incarnation=1, pid=1, returncode=-9, expected=False))
            acc = await corr.close_window("w1", expected={"profiling": 2})
            await bus.aclose()
        assert acc.balanced, acc.problems
        assert acc.by_cause == {"profiling": {"ok": 1, "server_crash": 1}}
        assert [e.request_ids for e in seen if isinstance(e, RequestsInFlight)] == [["lost"]]
        assert sum(isinstance(e, AccountingChecked) for e in seen) == 1

    @pytest.mark.anyio
    async def test_exit_time_is_when_the_process_died_not_when_it_was_journaled(self) -> None:
        """A request sent after the process died but before ServerExited was published was not in flight;
        the window's AIPerf concurrency bounds the crash list."""
        bus = Bus("t")
        seen: list = []
        corr = Correlator(bus, key_parser=parse_key, match_timeout_s=0.2, tick_s=0.02)
        async with anyio.create_task_group() as tg:
            sub = bus.subscribe("probe", size=10_000)

            async def collect() -> None:
                async with sub:
                    async for ev in sub:
                        seen.append(ev)

            tg.start_soon(collect)
            await tg.start(corr.run)
            await bus.publish(AiperfStarted(window="w1", argv=["aiperf", "profile", "--concurrency", "2"],
                                            shell="", artifact_dir=""))
            died = time.time_ns() - S // 2
            await bus.publish(client("open", status=None, error_type="ServerDisconnectedError",
                                     error="Server disconnected", start=died - S // 10, end=died + S // 100))
            await bus.publish(client("pooled", status=None, error_type="ServerDisconnectedError",
                                     error="Server disconnected", start=died + S // 10, end=died + S // 10))
            await bus.publish(ServerExited(incarnation=1, pid=1, returncode=-9, expected=False,
                                           exited_unix_ns=died))
            acc = await corr.close_window("w1")
            await bus.aclose()
        got = {e.request_id: (e.cause, e.cause_rule) for e in seen if isinstance(e, RequestCorrelated)}
        assert got == {"open": ("server_crash", "open_at_exit"), "pooled": ("connection", "sent_after_exit")}
        [inflight] = [e for e in seen if isinstance(e, RequestsInFlight)]
        assert (inflight.request_ids, inflight.limit) == (["open"], 2)
        assert acc.balanced, acc.problems

    @pytest.mark.anyio
    async def test_stage_collector_waits_for_the_windows_accounting(self) -> None:
        """qualify's collector returns once it has seen the window's AccountingChecked (then it holds every
        request of the window), not after a pause: however long it waits, it waits for the accounting."""
        bus = Bus("t")
        corr = Correlator(bus, match_timeout_s=0.2, tick_s=0.02)
        collector = WindowCollector(bus, "w1")
        result: list[bool] = []
        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(corr.run)
            await tg.start(collector.run)
            await bus.publish(AiperfStarted(window="w1", argv=[], shell="", artifact_dir=""))
            for i in range(3):
                await bus.publish(client(f"early{i}"))
                await bus.publish(server(f"early{i}"))

            async def wait() -> None:
                result.append(await collector.wait_accounted(30.0))
                done.set()

            tg.start_soon(wait)
            with anyio.move_on_after(0.3):
                await done.wait()
            assert not done.is_set(), "the collector stopped waiting before the window was accounted"
            for i in range(2):
                await bus.publish(client(f"late{i}"))
                await bus.publish(server(f"late{i}"))
            acc = await corr.close_window("w1")
            with anyio.fail_after(10):
                await done.wait()
            tg.cancel_scope.cancel()
        assert result == [True]
        assert sorted(e.request_id for e in collector.events) == ["early0", "early1", "early2", "late0", "late1"]
        assert acc.issued == {"profiling": 5}

    @pytest.mark.anyio
    async def test_stage_collector_timeout_is_a_warning(self) -> None:
        """No accounting within the deadline: False, and a Warned event says how many were collected."""
        bus = Bus("t")
        probe = bus.subscribe("probe", size=100)
        collector = WindowCollector(bus, "w1")
        async with anyio.create_task_group() as tg:
            await tg.start(collector.run)
            assert await collector.wait_accounted(0.05) is False
            tg.cancel_scope.cancel()
        warned = [e for e in iter(lambda: probe.receive_nowait() if probe.statistics().buffered else None, None)
                  if isinstance(e, Warned)]
        assert [w.code for w in warned] == ["window_collection_timed_out"]
        assert "within 0.05 s" in warned[0].message and "the 0 requests collected" in warned[0].message

    @pytest.mark.anyio
    async def test_publishing_never_deadlocks_on_its_own_full_queue(self) -> None:
        """With a tiny queue and a burst of records, the correlator still emits one event per request."""
        bus = Bus("t")
        corr = Correlator(bus, size=2, tick_s=0.01)
        got = 0
        async with anyio.create_task_group() as tg:
            sub = bus.subscribe("probe", size=100_000, lossy=True)
            await tg.start(corr.run)
            with anyio.fail_after(10):
                for i in range(300):
                    await bus.publish(client(f"r{i}"))
                    await bus.publish(server(f"r{i}"))
                acc = await corr.close_window("w1")
            await bus.aclose()
            while True:
                try:
                    ev = sub.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                got += isinstance(ev, RequestCorrelated)
            sub.close()
        assert got == 300 and acc.balanced


class TestAnswerGrace:
    def test_export_and_server_wait_for_the_tap_answer(self) -> None:
        """With a tap running, an ok export half plus the server half waits for the tap half's answer."""
        j = Joiner(key_parser=parse_key, answer_grace_s=2.0)
        assert j.add_client(client("a", via="export"), now_ns=0) == []
        assert j.add_server(server("a"), now_ns=1) == []
        (done,) = j.add_client(client("a", via="tap", answer="three"), now_ns=2)
        assert isinstance(done, RequestCorrelated) and done.answer == "three" and done.ok
        assert done.model_call_ms == 30.0 and done.request_latency_ms == 100.0

    def test_grace_expiry_settles_without_answer_and_not_in_flight(self) -> None:
        """If the tap half never comes, the request settles ok (no answer) after the grace, not as in flight."""
        j = Joiner(key_parser=parse_key, answer_grace_s=0.5)
        j.add_server(server("b"), now_ns=0)
        assert j.add_client(client("b", via="export"), now_ns=S // 10) == []
        assert j.expire(S // 2) == []
        (done,) = j.expire(S)
        assert isinstance(done, RequestCorrelated) and done.ok and done.answer is None
        acc = j.close_window("w1")[-1]
        assert acc.balanced and acc.in_flight == 0
