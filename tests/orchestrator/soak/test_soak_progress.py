"""The load's progress per AIPerf run, from its client records (the records step of the soak)."""

from __future__ import annotations

from typing import Literal

from orchestrator.events import AiperfStarted, ClientRecord, ProcessSampled
from orchestrator.soak.progress import LoadProgress

T0 = 1_800_000_000 * 10**9


class TestLoadProgress:
    def test_an_aiperf_run_is_known_by_its_pid_launch_and_latest_sample(self) -> None:
        progress = LoadProgress(None)  # type: ignore[arg-type]
        progress.observe(AiperfStarted(window="soak/aiperf01", argv=[], shell="", artifact_dir="", pid=11, ts_ns=T0 + 1))
        progress.observe(ProcessSampled(role="orchestrator", pid=7, rss_bytes=50 * 2**20, ts_ns=T0 + 2))
        progress.observe(ProcessSampled(role="aiperf", pid=11, rss_bytes=800 * 2**20, ts_ns=T0 + 3))
        assert progress.aiperf_launch_ns == {"soak/aiperf01": T0 + 1} and progress.aiperf_pids == {"soak/aiperf01": 11}
        assert progress.aiperf_sample == (11, T0 + 3, 800 * 2**20)

    def test_first_profiling_request_of_an_aiperf_run_is_remembered(self) -> None:
        """The first profiling client record of an AIPerf run fixes its start (warmup records do not)."""
        progress = LoadProgress(None)  # type: ignore[arg-type]
        records: list[tuple[Literal["warmup", "profiling"], int]] = [("warmup", T0), ("profiling", T0 + 7),
                                                                     ("profiling", T0 + 5)]
        for phase, start in records:
            progress.observe(ClientRecord(request_id=f"r{start}", aiperf_run="soak/aiperf01", phase=phase,
                                              request_start_ns=start))
        assert progress.first_profiling_ns == {"soak/aiperf01": T0 + 7}

    def test_a_handover_gap_starts_at_the_predecessors_last_answer(self) -> None:
        """A handover's gap is measured from the predecessor's last answer, not its last request start: a
        long request started first and answered last holds the load, so the successor waiting for it is no
        gap (the CI failure: a 1 s request read as a 1 s gap). Warmup records do not count."""
        progress = LoadProgress(None)  # type: ignore[arg-type]
        records: list[tuple[Literal["warmup", "profiling"], int, int]] = [
            ("profiling", T0, T0 + 3_000), ("profiling", T0 + 1_000, T0 + 1_500), ("warmup", T0 + 2_000, T0 + 9_000)]
        for phase, start, end in records:
            progress.observe(ClientRecord(request_id=f"r{start}", aiperf_run="soak/aiperf01", phase=phase,
                                              request_start_ns=start, request_end_ns=end))
        assert progress.last_profiling_ns == {"soak/aiperf01": T0 + 1_000}
        assert progress.last_answer_ns == {"soak/aiperf01": T0 + 3_000}
