"""The soak tracker with two windows open at once (one finalising while the next one runs)."""

from __future__ import annotations

from types import SimpleNamespace

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import AiperfStarted, RequestCorrelated, ResourceSampled
from orchestrator.soak import SoakTracker

T0 = 1_800_000_000 * 10**9


def _tracker() -> SoakTracker:
    model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
    return SoakTracker(None, None, model)  # type: ignore[arg-type]


def _request(window: str, rid: str) -> RequestCorrelated:
    return RequestCorrelated(request_id=rid, window=window, phase="profiling", ok=False, cause="http_5xx",
                             request_start_ns=T0, request_end_ns=T0 + 10**8)


class TestSoakTracker:
    def test_requests_go_to_the_window_they_name_and_samples_to_the_newest(self) -> None:
        """A late answer of window 1 after window 2 opened counts in window 1; a memory sample in window 2."""
        tracker = _tracker()
        tracker.open_window(1, T0)
        list(tracker._handle(AiperfStarted(window="soak/w0001", argv=[], shell="", artifact_dir="", pid=11,
                                           ts_ns=T0 + 1)))
        tracker.open_window(2, T0 + 20 * 10**9)
        for ev in (_request("soak/w0001", "late"), _request("soak/w0002", "new"), _request("soak/w0002", "new2"),
                   ResourceSampled(incarnation=1, pid=5, rss_bytes=100 * 2**20)):
            list(tracker._handle(ev))
        assert tracker.aiperf_launch_ns == {"soak/w0001": T0 + 1}
        first = tracker.close_window("soak/w0001", T0 + 30 * 10**9, aiperf_launch_unix_ns=T0 + 1)
        assert (first.issued, first.rss.samples, first.aiperf_launch_unix_ns) == (1, 0, T0 + 1)
        assert tracker.current is not None and tracker.current.window == "soak/w0002"
        assert tracker.aiperf_pids == {} and tracker.aiperf_launch_ns == {}  # forgotten at close: bounded
        second = tracker.close_window("soak/w0002", T0 + 40 * 10**9)
        assert (second.issued, second.rss.samples) == (2, 1)
        assert tracker.current is None

    def test_a_closed_window_takes_no_more_requests(self) -> None:
        """An event naming a window already closed is dropped, not added to the open one."""
        tracker = _tracker()
        tracker.open_window(1, T0)
        tracker.close_window("soak/w0001", T0 + 10**9)
        tracker.open_window(2, T0 + 2 * 10**9)
        list(tracker._handle(_request("soak/w0001", "straggler")))
        assert tracker.close_window("soak/w0002", T0 + 3 * 10**9).issued == 0
