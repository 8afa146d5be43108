"""The live page's fold (orchestrator/live/state.py), its batch coalescing, and `--serve` address parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from config_support import make_config

from orchestrator.base.errors import JournalError, UsageError
from orchestrator.events import (
    AccountingChecked,
    AnyEvent,
    ErrorRateDetail,
    GateEvaluated,
    MemoryDetail,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    PointStats,
    ProcessSampled,
    RequestCorrelated,
    ResourceSampled,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerLoadSampled,
    ServerRestarting,
    SloCheck,
    SoakPhase,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
    WindowStats,
)
from orchestrator.live.address import parse_serve
from orchestrator.live.feed import coalesce
from orchestrator.live.state import SERIES_CAP, Change, ModelRow, PageFold, PageState, detects
from orchestrator.live.tail import JournalTail
from orchestrator.spine.journal import encode_event


def _stamp(events: list[AnyEvent]) -> list[AnyEvent]:
    return [msgspec.structs.replace(ev, seq=i, ts_ns=1_000_000_000 * i) for i, ev in enumerate(events, 1)]


def _soak_events() -> list[AnyEvent]:
    req = [RequestCorrelated(request_id=f"r{i}", window="soak/w0001", phase="profiling", ok=i % 5 != 0,
                             cause="ok" if i % 5 else "http_5xx", request_latency_ms=float(i), model_call_ms=1.0,
                             request_end_ns=1_000_000_000 * (i + 3)) for i in range(1, 11)]
    return _stamp([
        RunStarted(command="soak", config=make_config()),
        PhaseStarted(phase="soak", model="m", detail=SoakPhase(duration_s=60.0, window_s=15.0)),
        SoakWindowOpened(window="soak/w0001", index=1, start_unix_ns=1),
        *req,
        ResourceSampled(incarnation=1, pid=9, rss_bytes=100 << 20),
        ProcessSampled(role="orchestrator", pid=8, rss_bytes=50 << 20),
        ProcessSampled(role="aiperf", pid=7, rss_bytes=300 << 20),
        ServerExited(incarnation=1, pid=9, returncode=-9, signal="SIGKILL"),
        ServerRestarting(incarnation=1, attempt=1, backoff_s=1.0, reason="exited with SIGKILL"),
        SoakWindowClosed(window="soak/w0001", index=1, summary=WindowStats(window="soak/w0001", index=1, start_unix_ns=1,
                                                                            end_unix_ns=2, issued=10, ok=8, errors=2)),
        SoakVerdict(metric="server_rss", passed=True, final=True, outcome="pass"),
        SoakVerdict(metric="server_rss", passed=False, final=False, outcome="fail"),
        RunFinished(status="ok", exit_code=0),
    ])


class TestPageFold:
    def test_a_soak_journal_folds_into_what_the_page_shows(self) -> None:
        """Counters by cause, one closed window of four planned, the server's restart with its cause and exit,
        memory of the server, aqbench and AIPerf, and the final verdict kept over a later checkpoint's."""
        fold = PageFold()
        fold.add_all(_soak_events())
        s = fold.state()
        assert (s.counters.issued, s.counters.ok, s.counters.errors, s.counters.by_cause) == (10, 8, 2, {"http_5xx": 2})
        assert (s.run.done, s.run.total, s.run.unit, s.run.status) == (1, 4, "windows", "ok")
        assert [(w.name, w.state, w.issued) for w in s.windows] == [("soak/w0001", "closed", 10)]
        assert s.server.restarts == 1 and s.server.causes == ["incarnation 1 attempt 1: exited with SIGKILL"]
        assert s.server.exits == ["incarnation 1 exited -9 SIGKILL during run"]
        assert {p.role for p in s.memory} == {"server", "aqbench", "aiperf"}
        assert [(p.client_ms, p.model_call_ms) for p in s.latency][:2] == [(1.0, 1.0), (2.0, 1.0)]
        assert [(v.name, v.outcome, v.final) for v in s.verdicts] == [("server_rss", "pass", True)]

    def test_changes_applied_to_a_journal_state_give_the_full_fold(self) -> None:
        """A page's state from a journal prefix plus the changes after it equals the fold of everything; the
        bus's copy of events the journal already had changes nothing (by seq)."""
        events = _soak_events()
        whole = PageFold()
        whole.add_all(events)
        early = PageFold()
        early.add_all(events[:8])
        page = msgspec.to_builtins(early.state())
        live = PageFold()
        changes = live.add_all(events[:8])
        changes = live.add_all(events[5:])  # an overlap, as a feed subscribed before its journal catch-up has
        for ch in changes:
            _apply(page, ch)
        page["seq"] = live.seq
        assert page == msgspec.to_builtins(whole.state())

    def test_the_servers_gauge_is_the_live_in_flight(self) -> None:
        """ServerLoadSampled moves the in-flight counter up and down and draws its chart; a window's accounting
        at its close (nothing left open) sets it too."""
        fold = PageFold()
        changes = fold.add_all(_stamp([RunStarted(command="soak"), *(ServerLoadSampled(incarnation=1, in_flight=n)
                                                                      for n in (0, 2, 4, 1)),
                                       AccountingChecked(window="soak/w0001", balanced=True, in_flight=0)]))
        s = fold.state()
        assert [(p.t_s, p.in_flight) for p in s.in_flight] == [(1.0, 0), (2.0, 2), (3.0, 4), (4.0, 1)]
        assert s.counters.in_flight == 0
        shown = [ch.value.in_flight for ch in changes if ch.section == "counters"]
        assert shown == [0, 2, 4, 1, 0]
        assert msgspec.json.encode(s.in_flight) == b"[[1.0,0],[2.0,2],[3.0,4],[4.0,1]]"

    def test_series_stay_bounded(self) -> None:
        """Thousands of requests keep at most SERIES_CAP latency points, evenly thinned from the start."""
        fold = PageFold()
        fold.add_all(_stamp([RequestCorrelated(request_id=str(i), phase="profiling", ok=True, request_latency_ms=1.0)
                             for i in range(5 * SERIES_CAP)]))
        assert SERIES_CAP // 2 <= len(fold.state().latency) <= SERIES_CAP

    def test_a_qualify_journal_lists_models_and_gates(self) -> None:
        """qualify: one row per model with its stage and status, progress in models, gates as verdicts."""
        config = make_config(models=[{"name": "a"}, {"name": "b"}])
        fold = PageFold()
        fold.add_all(_stamp([
            RunStarted(command="qualify", config=config),
            PhaseStarted(phase="model", model="a"), PhaseStarted(phase="correctness", model="a"),
            GateEvaluated(model="a", gate="min_pass_rate", required=0.9, observed=0.95, passed=True),
            ModelResult(model="a", status="aiperf-qualified"), PhaseFinished(phase="model", model="a", outcome="passed"),
            PhaseStarted(phase="model", model="b"), PhaseStarted(phase="server", model="b"),
        ]))
        s = fold.state()
        assert (s.run.done, s.run.total, s.run.unit) == (1, 2, "models")
        # a's row is how the report ends it (its result); b runs its server stage.
        assert [(m.name, m.stage, m.state) for m in s.models] == [("a", "done", "aiperf-qualified"),
                                                                 ("b", "server", "running")]
        # The run interrupted: b ends as the report says, in the stage it was in.
        [b] = [m for m in fold.add(msgspec.structs.replace(RunFinished(status="interrupted", reason="SIGINT"), seq=99))
               if m.section == "models"]
        assert isinstance(b.value, ModelRow) and (b.value.name, b.value.stage, b.value.state) == \
            ("b", "server", "interrupted")
        [gate] = s.verdicts
        assert (gate.name, gate.outcome, gate.estimate, gate.limit) == ("a min_pass_rate", "pass", 0.95, 0.9)

    def test_a_sweep_journal_lists_points_with_their_slo_states(self) -> None:
        """sweep: one row per point as of its latest judgement (a rerun replaces it), each SLO's state and the
        reason of the one that broke; progress in points; the capacity as the final verdict with its bracket."""
        broke = SloCheck(slo="p99_latency", outcome="fail", observed=9100.0, limit=8000.0,
                         reason="p99 9100 ms > 8000 ms")

        def point(offered: float, outcome: str, runs: int = 1) -> SweepPointJudged:
            checks = [broke] if outcome == "fail" else [SloCheck(slo="p99_latency", outcome=outcome, reason="why")]  # type: ignore[arg-type]
            return SweepPointJudged(index=0, mode="rate", offered=offered, outcome=outcome,  # type: ignore[arg-type]
                                    windows=[f"m/rate{offered:g}-{i}" for i in range(1, runs + 1)],
                                    checks=[*checks, SloCheck(slo="error_rate", outcome="pass", reason="0 of 300")],
                                    stats=PointStats(requests=300 * runs, ok=300 * runs, latency_p99_ms=500.0))

        events = _stamp([
            RunStarted(command="sweep", config=make_config()),
            PhaseStarted(phase="sweep", detail=SweepPhase(mode="rate", points=[1.0, 3.0, 3.4, 5.0])),
            point(1.0, "pass"), point(3.0, "inconclusive"), point(3.0, "pass", runs=2)])
        fold = PageFold()
        fold.add_all(events)
        s = fold.state()
        assert (s.run.done, s.run.total, s.run.unit) == (2, 4, "points")
        assert [(p.name, p.outcome, p.runs, p.requests) for p in s.points] == [
            ("1 req/s", "pass", 1, 300), ("3 req/s", "pass", 2, 600)]
        fold.add_all(_stamp([*events, point(3.4, "fail"), SweepConcluded(
            outcome="bracketed", mode="rate", unit="req/s", capacity=3.0, highest_passing=3.0, lowest_failing=3.4,
            broken=[broke], summary="capacity 3 req/s")])[len(events):])
        s = fold.state()
        assert (s.run.done, s.run.total) == (3, 3)  # 5 req/s is above the broken point: never run
        last = s.points[-1]
        assert (last.name, last.outcome) == ("3.4 req/s", "fail")
        assert [(c.slo, c.outcome, c.reason) for c in last.slos] == [
            ("p99_latency", "fail", "p99 9100 ms > 8000 ms"), ("error_rate", "pass", "")]
        [capacity] = s.verdicts
        assert (capacity.name, capacity.outcome, capacity.estimate, capacity.interval, capacity.unit) == (
            "capacity", "pass", 3.0, [3.0, 3.4], "req/s")
        assert capacity.final and capacity.reason == "bracketed: capacity 3 req/s"

    @pytest.mark.parametrize(("outcome", "shown"), [("none_passed", "fail"), ("inconclusive", "inconclusive"),
                                                    ("all_passed", "pass")])
    def test_the_capacity_verdict_says_how_far_the_points_decided_it(self, outcome: str, shown: str) -> None:
        """No point held: fail; undecided points: inconclusive, naming them; every point held: pass."""
        fold = PageFold()
        fold.add_all(_stamp([SweepConcluded(outcome=outcome, mode="concurrency", unit="concurrent requests",  # type: ignore[arg-type]
                                            undecided=["4: p99 needs 100 requests"] if shown == "inconclusive" else [])]))
        [capacity] = fold.state().verdicts
        assert capacity.outcome == shown
        assert ("4: p99 needs 100 requests" in capacity.detects) == (shown == "inconclusive")


def _apply(page: dict[str, object], change: Change) -> None:
    """What page.js does with one change (set, put by key, add a point)."""
    if change.seq <= page["seq"]:  # type: ignore[operator]
        return
    value = msgspec.to_builtins(change.value)
    section: list[object] | object = page.get(change.section)
    if change.op == "set":
        page[change.section] = value
    elif change.op == "add":
        assert isinstance(section, list)
        section.append(value)
    else:
        assert isinstance(section, list)
        for i, row in enumerate(section):
            if row["name"] == value["name"]:  # type: ignore[index]
                section[i] = value
                break
        else:
            section.append(value)


class TestDetects:
    @pytest.mark.parametrize(("detail", "text"), [
        (MemoryDetail(slope=2.0, interval=[-1.0, 5.0], limit=10.0, unit="MiB/h"),
         "a slope beyond ±3 MiB/h (can tell it from the limit 10)"),
        (MemoryDetail(slope=2.0, interval=[-30.0, 34.0], limit=10.0, unit="MiB/h"),
         "a slope beyond ±32 MiB/h (cannot yet tell it from the limit 10)"),
        (MemoryDetail(limit=10.0, unit="MiB/h"), "nothing yet: no interval on the slope (limit 10 MiB/h)"),
        (ErrorRateDetail(limit=0.001), "a value above 0.001"),
        (None, "")])
    def test_each_verdict_says_what_its_evidence_can_detect(self, detail: Any, text: str) -> None:
        """A trend's interval half-width against its limit; nothing without an interval; a rate's limit."""
        assert detects(SoakVerdict(metric="m", passed=True, detail=detail)) == text


class TestJournalTail:
    def test_each_call_folds_only_the_new_whole_lines(self, tmp_path: Path) -> None:
        """A line still being written waits for the next call; the state then equals the fold of everything."""
        events = _soak_events()
        path = tmp_path / "events.jsonl"
        lines = [encode_event(ev) + b"\n" for ev in events]
        path.write_bytes(b"".join(lines[:5]) + lines[5][:10])
        tail = JournalTail(path)
        assert tail.state().seq == 5
        with path.open("ab") as fh:
            fh.write(lines[5][10:] + b"".join(lines[6:]))
        whole = PageFold()
        whole.add_all(events)
        assert tail.state() == whole.state()

    def test_a_corrupt_line_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "events.jsonl"
        path.write_bytes(encode_event(_soak_events()[0]) + b"\n{not json\n")
        with pytest.raises(JournalError, match=r"events.jsonl: line 2 does not decode"):
            JournalTail(path).state()


class TestCoalesce:
    def test_a_batch_keeps_the_last_set_and_put_and_every_point(self) -> None:
        """Sets and puts are replaced by the batch's last; points are all kept in order."""
        fold = PageFold()
        changes = fold.add_all(_soak_events()[:14])
        kept = coalesce(changes)
        assert [c.section for c in kept if c.op == "set"].count("counters") == 1
        assert next(c for c in kept if c.section == "counters").value.issued == 10
        assert len([c for c in kept if c.section == "latency"]) == 8  # the ok requests
        assert len([c for c in kept if c.op == "put" and c.section == "windows"]) == 1


class TestServeAddress:
    @pytest.mark.parametrize(("text", "host", "port"), [
        ("8090", "127.0.0.1", 8090), ("localhost:0", "localhost", 0), ("[::1]:8090", "::1", 8090),
        ("127.0.0.2:1", "127.0.0.2", 1)])
    def test_loopback_addresses_need_nothing_more(self, text: str, host: str, port: int) -> None:
        """A port alone binds 127.0.0.1; any loopback host is served without --serve-public."""
        address = parse_serve(text)
        assert (address.host, address.port, address.loopback) == (host, port, True)

    def test_other_addresses_need_serve_public(self) -> None:
        """0.0.0.0 is refused with the flag to add; with --serve-public it is accepted and not loopback."""
        with pytest.raises(UsageError, match=r"--serve 0.0.0.0:8090: 0.0.0.0 is not a loopback address; .* "
                                             r"Add --serve-public"):
            parse_serve("0.0.0.0:8090")
        assert not parse_serve("0.0.0.0:8090", public=True).loopback

    @pytest.mark.parametrize(("text", "message"), [
        ("http", r"--serve http: expected \[HOST:\]PORT"), ("70000", r"port 70000 is outside 0-65535"),
        ("::1:80", r"write an IPv6 address in brackets")])
    def test_bad_addresses_say_what_is_wrong(self, text: str, message: str) -> None:
        with pytest.raises(UsageError, match=message):
            parse_serve(text)


def test_page_state_round_trips() -> None:
    """The page state is plain JSON both ways (the page reads what the fold wrote)."""
    fold = PageFold()
    fold.add_all(_soak_events())
    state = fold.state()
    assert msgspec.json.decode(msgspec.json.encode(state), type=PageState) == state
