"""Server-only records of consecutive, overlapping-in-finalisation windows are attributed by launch time."""

from __future__ import annotations

import msgspec

from orchestrator.correlate import Joiner
from orchestrator.events import AccountingChecked, ClientRecord, RequestUnmatched, ServerRecord

S = 1_000_000_000
T0 = 1_800_000_000 * S


def _client(rid: str, window: str, start: int) -> ClientRecord:
    return ClientRecord(request_id=rid, aiperf_run=window, phase="profiling", status_code=200, request_start_ns=start,
                        request_end_ns=start + S // 10, request_latency_ms=100.0, answer="x")


def _server(rid: str, *, end: int, handler_ms: float | None = 100.0) -> ServerRecord:
    return ServerRecord(request_id=rid, status=200, handler_ms=handler_ms, incarnation=1, end_unix_ns=end)


def _accounting(events: list) -> AccountingChecked:
    [acc] = [e for e in events if isinstance(e, AccountingChecked)]
    return acc


class TestWindowAttribution:
    def test_straggler_of_previous_window_counts_in_it_not_in_the_next(self) -> None:
        """A server record begun before window 2's launch but seen after it belongs to window 1."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1", T0)
        j.add_client(_client("a", "w1", T0 + S), 0)
        j.add_server(_server("a", end=T0 + S + S // 10), 0)
        j.start_window("w2", T0 + 20 * S)
        # Begun at T0+18 s (before w2's launch), ended after it: window 1's straggler.
        j.add_server(_server("late", end=T0 + 21 * S, handler_ms=3000.0), 0)
        # Begun after w2's launch: window 2's.
        j.add_server(_server("new", end=T0 + 25 * S), 0)
        acc1 = _accounting(j.close_window("w1"))
        assert acc1.server_without_client == ["late"] and acc1.issued == {"profiling": 1}
        assert j.statistics().open_servers == 1  # window 2's half stays open
        acc2 = _accounting(j.close_window("w2"))
        assert acc2.server_without_client == ["new"]

    def test_record_without_end_time_uses_its_bus_stamp(self) -> None:
        """trtmc-server's records carry no end_unix_ns: the time the record was read stands in for it."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 20 * S)
        late = ServerRecord(request_id="late", status=200, handler_ms=3000.0, incarnation=1, ts_ns=T0 + 21 * S)
        new = ServerRecord(request_id="new", status=200, handler_ms=100.0, incarnation=1, ts_ns=T0 + 25 * S)
        assert (j.server_window(late), j.server_window(new)) == ("w1", "w2")

    def test_straggler_after_its_window_closed_is_journaled_under_it_and_tallied_nowhere(self) -> None:
        """A window-1 server record that expires after window 1 closed does not unbalance window 2."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 20 * S)
        j.close_window("w1")
        j.add_client(_client("b", "w2", T0 + 21 * S), 0)
        j.add_server(_server("b", end=T0 + 21 * S + S // 10), 0)
        j.add_server(_server("old", end=T0 + 22 * S, handler_ms=5000.0), 0)
        [unmatched] = [e for e in j.expire(2 * S) if isinstance(e, RequestUnmatched)]
        assert (unmatched.request_id, unmatched.window, unmatched.cause) == ("old", "w1", "no_client_record")
        acc2 = _accounting(j.close_window("w2"))
        assert acc2.balanced and acc2.server_without_client == [] and acc2.issued == {"profiling": 1}

    def test_without_launch_times_the_window_started_last_takes_server_only_records(self) -> None:
        """Callers that give no launch time keep the old rule (ingest, single-run qualify)."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("w1")
        j.start_window("w2")
        j.add_server(_server("s", end=T0), 0)
        assert _accounting(j.close_window("w1")).server_without_client == []
        assert _accounting(j.close_window("w2")).server_without_client == ["s"]

    def test_a_reused_window_name_is_open_again(self) -> None:
        """Starting a window under a closed window's name accounts its server-only records again."""
        j = Joiner(match_timeout_s=1.0)
        j.start_window("run", T0)
        j.close_window("run")
        j.start_window("run", T0 + 10 * S)
        j.add_server(_server("s", end=T0 + 11 * S), 0)
        assert _accounting(j.close_window("run")).server_without_client == ["s"]


class TestTimeCuts:
    def test_client_records_count_in_the_window_their_request_started_in(self) -> None:
        """Cut by time, one load client's records (all naming its run) split at the cut; each counts once."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 10 * S)  # opened ahead of its start
        out = []
        for rid, start in (("a", T0 + 9 * S), ("b", T0 + 10 * S), ("c", T0 + 11 * S)):
            out += j.add_client(_client(rid, "aiperf01", start), 0)
            out += j.add_server(_server(rid, end=start + S // 10), 0)
        assert {e.request_id: e.window for e in out} == {"a": "w1", "b": "w2", "c": "w2"}
        assert _accounting(j.close_window("w1")).issued == {"profiling": 1}
        assert _accounting(j.close_window("w2")).issued == {"profiling": 2}

    def test_a_request_of_a_closed_window_counts_in_the_oldest_open_one_and_says_so(self) -> None:
        """A straggler whose window closed already is counted once, in the oldest open window, named there."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 10 * S)
        j.close_window("w1")
        out = j.add_client(_client("late", "aiperf01", T0 + 5 * S), 0)
        out += j.add_server(_server("late", end=T0 + 12 * S), 0)
        assert [e.window for e in out] == ["w2"]
        acc = _accounting(j.close_window("w2"))
        assert acc.issued == {"profiling": 1}
        assert acc.problems == ["request late started in w1, closed before it ended; counted here"]

    def test_a_window_closed_on_time_carries_its_open_requests_into_the_next_one(self) -> None:
        """A soak's window closed on time (carry): a request started in it, still open (no record, or only its
        server half), is not in flight at the close; once settled it counts in the next window as carried, and
        both windows balance. A straggler of a window closed the ordinary way stays a problem."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 10 * S)
        out = j.add_client(_client("done", "aiperf01", T0 + S), 0) + j.add_server(_server("done", end=T0 + 2 * S), 0)
        out += j.add_server(_server("half", end=T0 + 10 * S), 0)  # its client record is not here yet
        acc1 = _accounting(j.close_window("w1", carry=True))
        assert acc1.balanced and acc1.issued == {"profiling": 1} and acc1.in_flight == 0, acc1.problems
        assert acc1.server_without_client == []
        out = j.add_client(_client("half", "aiperf01", T0 + 9 * S), 0)
        out += j.add_client(_client("slow", "aiperf01", T0 + 9 * S), 0) + j.add_server(_server("slow", end=T0 + 12 * S), 0)
        out += j.add_client(_client("new", "aiperf01", T0 + 11 * S), 0) + j.add_server(_server("new", end=T0 + 12 * S), 0)
        assert {e.request_id: e.window for e in out} == {"half": "w2", "slow": "w2", "new": "w2"}
        acc2 = _accounting(j.close_window("w2"))
        assert acc2.balanced and acc2.issued == {"profiling": 3} and acc2.carried == 2, acc2.problems

    def test_the_other_sources_half_of_a_request_settled_before_an_on_time_close_is_merged(self) -> None:
        """The tap's record settles a request, the window closes on time, then AIPerf's export describes the
        same request: merged (no second count, no unmatched half), as before a late close."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 10 * S)
        j.add_client(msgspec.structs.replace(_client("a", "aiperf01", T0 + 9 * S), via="tap"), 0)
        j.add_server(_server("a", end=T0 + 9 * S + S // 10), 0)
        assert _accounting(j.close_window("w1", carry=True)).issued == {"profiling": 1}
        assert j.add_client(_client("a", "aiperf01", T0 + 9 * S), 0) == []  # the export's half
        assert j.expire(10 * S) == []
        acc2 = _accounting(j.close_window("w2"))
        assert acc2.balanced and acc2.issued == {} and acc2.carried == 0, acc2.problems

    def test_a_carried_server_half_without_its_client_half_is_a_breach_where_carried(self) -> None:
        """A server record of a window closed on time whose client record never comes is counted (as a server
        record without a client record) in the window that took that window's stragglers."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 10 * S)
        j.add_server(_server("lost", end=T0 + 10 * S), 0)
        assert _accounting(j.close_window("w1", carry=True)).balanced
        j.expire(5 * S)
        acc2 = _accounting(j.close_window("w2"))
        assert not acc2.balanced and acc2.server_without_client == ["lost"]

    def test_a_window_opened_ahead_but_never_reached_is_discarded(self) -> None:
        """A cut the load never reached is forgotten; one that holds a request is not."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.start_window("w2", T0 + 10 * S)
        j.add_client(_client("a", "aiperf01", T0 + S), 0)
        j.add_server(_server("a", end=T0 + 2 * S), 0)
        assert not j.discard_window("w1")
        assert j.discard_window("w2")
        assert j.window == "w1"
        # With w2 gone, a late record of its time counts in w1 (the latest cut at or before it).
        assert [e.window for e in j.add_client(_client("b", "aiperf01", T0 + 11 * S), 0)
                + j.add_server(_server("b", end=T0 + 12 * S), 0)] == ["w1"]
