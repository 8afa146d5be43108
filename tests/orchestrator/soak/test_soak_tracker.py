"""The soak tracker with several windows open at once (time cuts of one load, each closing late)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Literal

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import AiperfStarted, ClientRecord, ProcessSampled, RequestCorrelated, ResourceSampled
from orchestrator.soak import SoakTracker

T0 = 1_800_000_000 * 10**9


def _tracker() -> SoakTracker:
    model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
    return SoakTracker(None, None, model)  # type: ignore[arg-type]


def _request(window: str, rid: str) -> RequestCorrelated:
    return RequestCorrelated(request_id=rid, window=window, phase="profiling", ok=False, cause="http_5xx",
                             request_start_ns=T0, request_end_ns=T0 + 10**8)


class TestSoakTracker:
    def test_requests_go_to_the_window_they_name_and_samples_by_their_time(self) -> None:
        """A late answer of window 1 after window 2 opened counts in window 1; memory samples (the server's
        and the observer's) count in the open window whose start is the latest at or before their time."""
        tracker = _tracker()
        tracker.open_window(1, T0)
        list(tracker._handle(AiperfStarted(window="soak/aiperf01", argv=[], shell="", artifact_dir="", pid=11,
                                           ts_ns=T0 + 1)))
        tracker.open_window(2, T0 + 20 * 10**9)
        for ev in (_request("soak/w0001", "late"), _request("soak/w0002", "new"), _request("soak/w0002", "new2"),
                   ResourceSampled(incarnation=1, pid=5, rss_bytes=100 * 2**20, ts_ns=T0 + 25 * 10**9),
                   ResourceSampled(incarnation=1, pid=5, rss_bytes=90 * 2**20, ts_ns=T0 + 5 * 10**9),
                   ProcessSampled(role="orchestrator", pid=7, rss_bytes=50 * 2**20, ts_ns=T0 + 21 * 10**9),
                   ProcessSampled(role="aiperf", pid=11, rss_bytes=800 * 2**20, ts_ns=T0 + 22 * 10**9)):
            list(tracker._handle(ev))
        assert tracker.aiperf_launch_ns == {"soak/aiperf01": T0 + 1} and tracker.aiperf_pids == {"soak/aiperf01": 11}
        first = tracker.close_window("soak/w0001", T0 + 30 * 10**9, aiperf_launch_unix_ns=T0 + 1)
        assert (first.issued, first.rss.samples, first.rss.median_bytes) == (1, 1, 90 * 2**20)
        assert first.aiperf_launch_unix_ns == T0 + 1 and first.orchestrator_rss.samples == 0
        assert tracker.current is not None and tracker.current.window == "soak/w0002"
        second = tracker.close_window("soak/w0002", T0 + 40 * 10**9)
        assert (second.issued, second.rss.samples, second.rss.peak_bytes) == (2, 1, 100 * 2**20)
        assert second.orchestrator_rss.median_bytes == 50 * 2**20 and second.aiperf_rss.peak_bytes == 800 * 2**20
        assert tracker.current is None

    def test_every_memory_sample_is_kept_for_the_verdicts_open_window_or_not(self) -> None:
        """Each memory sample reaches its verdict's series (server, GPU, aqbench, AIPerf), also when no window
        is open: the sampled memory rule judges samples, not windows (issue 29). A restarting server's samples
        before it is ready are left out: its climb to its level is no leak."""
        tracker = _tracker()
        for s in range(20):
            for ev in (ResourceSampled(incarnation=1, pid=5, rss_bytes=(100 + s) * 2**20, gpu_memory_bytes=2**30,
                                       ts_ns=T0 + s * 10**9),
                       ProcessSampled(role="orchestrator", pid=7, rss_bytes=50 * 2**20, ts_ns=T0 + s * 10**9),
                       ProcessSampled(role="aiperf", pid=11, rss_bytes=800 * 2**20, ts_ns=T0 + s * 10**9)):
                list(tracker._handle(ev))
        list(tracker._handle(ResourceSampled(incarnation=2, pid=6, rss_bytes=2**20, pre_ready=True, ts_ns=T0 + 2)))
        assert sorted(tracker.samples) == ["aiperf_rss", "orchestrator_rss", "server_gpu_memory", "server_rss"]
        times, values, samples = tracker.samples["server_rss"].between(T0, T0 + 20 * 10**9)
        assert samples == 20 and values == [104.5, 114.5] and times == [T0 / 1e9 + 4.5, T0 / 1e9 + 14.5]
        assert tracker.samples["server_gpu_memory"].between(T0, T0 + 20 * 10**9)[1] == [1024.0, 1024.0]

    def test_first_profiling_request_of_an_aiperf_run_is_remembered(self) -> None:
        """The first profiling client record of an AIPerf run fixes its start (warmup records do not)."""
        tracker = _tracker()
        records: list[tuple[Literal["warmup", "profiling"], int]] = [("warmup", T0), ("profiling", T0 + 7),
                                                                     ("profiling", T0 + 5)]
        for phase, start in records:
            list(tracker._handle(ClientRecord(request_id=f"r{start}", aiperf_run="soak/aiperf01", phase=phase,
                                              request_start_ns=start)))
        assert tracker.first_profiling_ns == {"soak/aiperf01": T0 + 7}

    def test_a_handover_gap_starts_at_the_predecessors_last_answer(self) -> None:
        """A handover's gap is measured from the predecessor's last answer, not its last request start: a
        long request started first and answered last holds the load, so the successor waiting for it is no
        gap (the CI failure: a 1 s request read as a 1 s gap). Warmup records do not count."""
        tracker = _tracker()
        records: list[tuple[Literal["warmup", "profiling"], int, int]] = [
            ("profiling", T0, T0 + 3_000), ("profiling", T0 + 1_000, T0 + 1_500), ("warmup", T0 + 2_000, T0 + 9_000)]
        for phase, start, end in records:
            list(tracker._handle(ClientRecord(request_id=f"r{start}", aiperf_run="soak/aiperf01", phase=phase,
                                              request_start_ns=start, request_end_ns=end)))
        assert tracker.last_profiling_ns == {"soak/aiperf01": T0 + 1_000}
        assert tracker.last_answer_ns == {"soak/aiperf01": T0 + 3_000}

    def test_a_closed_window_takes_no_more_requests(self) -> None:
        """An event naming a window already closed is dropped, not added to the open one."""
        tracker = _tracker()
        tracker.open_window(1, T0)
        tracker.close_window("soak/w0001", T0 + 10**9)
        tracker.open_window(2, T0 + 2 * 10**9)
        list(tracker._handle(_request("soak/w0001", "straggler")))
        assert tracker.close_window("soak/w0002", T0 + 3 * 10**9).issued == 0

    def test_each_answer_feeds_the_latency_ratios_by_timing_source(self) -> None:
        """An answered profiling request adds its handler_ms to the server ratios and its client latency to
        the client ratios; the judged span starts `warmup_s` after the first profiling record's start."""
        dataset = SimpleNamespace(item=lambda item_id: (_ for _ in ()).throw(KeyError(item_id)))
        model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
        tracker = SoakTracker(None, dataset, model, warmup_s=10, baseline_s=20)  # type: ignore[arg-type]
        tracker.open_window(1, T0)
        list(tracker._handle(ClientRecord(request_id="r0", aiperf_run="soak/aiperf01", phase="profiling",
                                          request_start_ns=T0)))
        for s, handler in ((5, None), (12, 100.0), (40, 150.0), (41, None)):
            list(tracker._handle(RequestCorrelated(
                request_id=f"r{s}", window="soak/w0001", phase="profiling", ok=True, item_id="a",
                request_start_ns=T0 + s * 10**9, request_end_ns=T0 + s * 10**9 + 1, handler_ms=handler,
                request_latency_ms=200.0)))
        server, client = tracker.ratios["server"], tracker.ratios["client"]
        assert server.judged_from_ns == client.judged_from_ns == T0 + 10 * 10**9
        assert (server.warmup, server.baseline_requests, server.ratios) == (0, 1, 1)
        assert (client.warmup, client.baseline_requests, client.ratios) == (1, 1, 2)
        assert server.series.between(T0, T0 + 60 * 10**9)[1] == [150.0]

    def test_aiperf_samples_are_kept_by_process_generation(self) -> None:
        """Each AIPerf process's samples form its own generation, in the order the processes sampled, from
        its first profiling request; a process none of whose requests was seen carried no load and is left
        out (judge.generations judges aiperf_rss per generation after a handover)."""
        tracker = _tracker()
        for window, pid in (("soak/aiperf01", 11), ("soak/aiperf02", 12), ("soak/aiperf03", 13)):
            list(tracker._handle(AiperfStarted(window=window, argv=[], shell="", artifact_dir="", pid=pid, ts_ns=T0)))
        for window, start in (("soak/aiperf01", T0 + 2 * 10**9), ("soak/aiperf02", T0 + 30 * 10**9)):
            list(tracker._handle(ClientRecord(request_id=f"r{start}", aiperf_run=window, phase="profiling",
                                              request_start_ns=start)))
        for s in range(60):
            pid = 11 if s < 30 else 12
            list(tracker._handle(ProcessSampled(role="aiperf", pid=pid, rss_bytes=(800 + pid) * 2**20,
                                                ts_ns=T0 + s * 10**9)))
        list(tracker._handle(ProcessSampled(role="aiperf", pid=13, rss_bytes=2**30, ts_ns=T0 + 61 * 10**9)))
        gens = tracker.aiperf_generations(T0 + 100 * 10**9)
        assert [g.pid for g in gens] == [11, 12]
        assert [g.start_s for g in gens] == [T0 / 1e9 + 2, T0 / 1e9 + 30]
        assert gens[0].values == [811.0, 811.0, 811.0] and gens[1].values == [812.0, 812.0, 812.0]
        assert tracker.aiperf_generations(T0 + 25 * 10**9)[1:] == []
