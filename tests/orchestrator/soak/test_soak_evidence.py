"""The verdict step's evidence: the events the soak's verdicts judge, folded into one snapshot."""

from __future__ import annotations

from orchestrator.events import (
    AiperfStarted,
    ClientRecord,
    ProcessSampled,
    RequestCorrelated,
    ResourceSampled,
    SoakHandover,
    SoakWindowClosed,
    SoakWindowOpened,
    WindowStats,
)
from orchestrator.soak.evidence import EvidenceCollector, LoadFacts

T0 = 1_800_000_000 * 10**9


class TestEvidenceCollector:
    def test_every_memory_sample_is_kept_for_the_verdicts_open_window_or_not(self) -> None:
        """Each memory sample reaches its verdict's series (server, GPU, aqbench, AIPerf), also when no window
        is open: the sampled memory rule judges samples, not windows (issue 29). A restarting server's samples
        before it is ready are left out: its climb to its level is no leak."""
        tracker = EvidenceCollector(None)  # type: ignore[arg-type]
        for s in range(20):
            for ev in (ResourceSampled(incarnation=1, pid=5, rss_bytes=(100 + s) * 2**20, gpu_memory_bytes=2**30,
                                       ts_ns=T0 + s * 10**9),
                       ProcessSampled(role="orchestrator", pid=7, rss_bytes=50 * 2**20, ts_ns=T0 + s * 10**9),
                       ProcessSampled(role="aiperf", pid=11, rss_bytes=800 * 2**20, ts_ns=T0 + s * 10**9)):
                tracker.observe(ev)
        tracker.observe(ResourceSampled(incarnation=2, pid=6, rss_bytes=2**20, pre_ready=True, ts_ns=T0 + 2))
        assert sorted(tracker.samples) == ["aiperf_rss", "orchestrator_rss", "server_gpu_memory", "server_rss"]
        times, values, samples = tracker.samples["server_rss"].between(T0, T0 + 20 * 10**9)
        assert samples == 20 and values == [104.5, 114.5] and times == [T0 / 1e9 + 4.5, T0 / 1e9 + 14.5]
        assert tracker.samples["server_gpu_memory"].between(T0, T0 + 20 * 10**9)[1] == [1024.0, 1024.0]

    def test_each_answer_feeds_the_latency_ratios_by_timing_source(self) -> None:
        """An answered profiling request adds its handler_ms to the server ratios and its client latency to
        the client ratios; the judged span starts `warmup_s` after the first profiling record's start."""
        tracker = EvidenceCollector(None, warmup_s=10, baseline_s=20)  # type: ignore[arg-type]
        tracker.observe(SoakWindowOpened(window="soak/w0001", index=1, start_unix_ns=T0))
        tracker.observe(ClientRecord(request_id="r0", aiperf_run="soak/aiperf01", phase="profiling",
                                     request_start_ns=T0))
        for s, handler in ((5, None), (12, 100.0), (40, 150.0), (41, None)):
            tracker.observe(RequestCorrelated(
                request_id=f"r{s}", window="soak/w0001", phase="profiling", ok=True, item_id="a",
                request_start_ns=T0 + s * 10**9, request_end_ns=T0 + s * 10**9 + 1, handler_ms=handler,
                request_latency_ms=200.0))
        # A request of a window not open (the capability probe's, or one already closed) adds no ratio.
        tracker.observe(RequestCorrelated(request_id="probe", window="soak/probe", phase="profiling", ok=True,
                                          item_id="a", request_start_ns=T0 + 50 * 10**9, handler_ms=1.0,
                                          request_latency_ms=1.0))
        server, client = tracker.ratios["server"], tracker.ratios["client"]
        assert server.judged_from_ns == client.judged_from_ns == T0 + 10 * 10**9
        assert (server.warmup, server.baseline_requests, server.ratios) == (0, 1, 1)
        assert (client.warmup, client.baseline_requests, client.ratios) == (1, 1, 2)
        assert server.series.between(T0, T0 + 60 * 10**9)[1] == [150.0]

    def test_aiperf_samples_are_kept_by_process_generation(self) -> None:
        """Each AIPerf process's samples form its own generation, in the order the processes sampled, from
        its first profiling request; a process none of whose requests was seen carried no load and is left
        out (judge.generations judges aiperf_rss per generation after a handover)."""
        tracker = EvidenceCollector(None)  # type: ignore[arg-type]
        for window, pid in (("soak/aiperf01", 11), ("soak/aiperf02", 12), ("soak/aiperf03", 13)):
            tracker.observe(AiperfStarted(window=window, argv=[], shell="", artifact_dir="", pid=pid, ts_ns=T0))
        for window, start in (("soak/aiperf01", T0 + 2 * 10**9), ("soak/aiperf02", T0 + 30 * 10**9)):
            tracker.observe(ClientRecord(request_id=f"r{start}", aiperf_run=window, phase="profiling",
                                              request_start_ns=start))
        for s in range(60):
            pid = 11 if s < 30 else 12
            tracker.observe(ProcessSampled(role="aiperf", pid=pid, rss_bytes=(800 + pid) * 2**20,
                                                ts_ns=T0 + s * 10**9))
        tracker.observe(ProcessSampled(role="aiperf", pid=13, rss_bytes=2**30, ts_ns=T0 + 61 * 10**9))
        gens = tracker.aiperf_generations(T0 + 100 * 10**9)
        assert [g.pid for g in gens] == [11, 12]
        assert [g.start_s for g in gens] == [T0 / 1e9 + 2, T0 / 1e9 + 30]
        assert gens[0].values == [811.0, 811.0, 811.0] and gens[1].values == [812.0, 812.0, 812.0]
        assert tracker.aiperf_generations(T0 + 25 * 10**9)[1:] == []

    def test_the_snapshot_holds_the_closed_windows_handovers_and_the_loops_facts(self) -> None:
        """Windows come from SoakWindowClosed (in the order closed), handovers from SoakHandover; the load's
        span runs from the first request to the last window's end; what only the loop knows is handed in."""
        collector = EvidenceCollector(None)  # type: ignore[arg-type]
        for index, start, first in ((1, T0, T0 + 3 * 10**9), (2, T0 + 60 * 10**9, None)):
            stats = WindowStats(window=f"soak/w{index:04d}", index=index, start_unix_ns=start,
                                end_unix_ns=start + 60 * 10**9, first_request_unix_ns=first)
            collector.observe(SoakWindowClosed(window=stats.window, index=index, summary=stats))
        collector.observe(SoakHandover(predecessor="soak/aiperf01", successor="soak/aiperf02", gap_s=0.25,
                                       first_request_unix_ns=T0 + 70 * 10**9))
        evidence = collector.evidence(LoadFacts(running="soak/aiperf02", cut_short={"soak/w0002"}),
                                      sampled_ratios=False)
        assert [w.index for w in evidence.windows] == [1, 2]
        assert evidence.load_span_ns == (T0 + 3 * 10**9, T0 + 120 * 10**9)
        assert evidence.handovers == (("soak/aiperf01 -> soak/aiperf02", 0.25, T0 + 70 * 10**9),)
        assert evidence.running == "soak/aiperf02" and evidence.cut_short == frozenset({"soak/w0002"})
        assert evidence.ratios is None and evidence.samples == {}
