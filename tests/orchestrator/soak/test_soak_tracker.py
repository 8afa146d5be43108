"""The soak tracker with several windows open at once (time cuts of one load, each closing late)."""

from __future__ import annotations

from types import SimpleNamespace

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import ProcessSampled, RequestCorrelated, ResourceSampled
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
        tracker.open_window(2, T0 + 20 * 10**9)
        for ev in (_request("soak/w0001", "late"), _request("soak/w0002", "new"), _request("soak/w0002", "new2"),
                   ResourceSampled(incarnation=1, pid=5, rss_bytes=100 * 2**20, ts_ns=T0 + 25 * 10**9),
                   ResourceSampled(incarnation=1, pid=5, rss_bytes=90 * 2**20, ts_ns=T0 + 5 * 10**9),
                   ProcessSampled(role="orchestrator", pid=7, rss_bytes=50 * 2**20, ts_ns=T0 + 21 * 10**9),
                   ProcessSampled(role="aiperf", pid=11, rss_bytes=800 * 2**20, ts_ns=T0 + 22 * 10**9)):
            list(tracker._handle(ev))
        first = tracker.close_window("soak/w0001", T0 + 30 * 10**9, aiperf_launch_unix_ns=T0 + 1)
        assert (first.issued, first.rss.samples, first.rss.median_bytes) == (1, 1, 90 * 2**20)
        assert first.aiperf_launch_unix_ns == T0 + 1 and first.orchestrator_rss.samples == 0
        assert tracker.current is not None and tracker.current.window == "soak/w0002"
        second = tracker.close_window("soak/w0002", T0 + 40 * 10**9)
        assert (second.issued, second.rss.samples, second.rss.peak_bytes) == (2, 1, 100 * 2**20)
        assert second.orchestrator_rss.median_bytes == 50 * 2**20 and second.aiperf_rss.peak_bytes == 800 * 2**20
        assert tracker.current is None

    def test_a_closed_window_takes_no_more_requests(self) -> None:
        """An event naming a window already closed is dropped, not added to the open one."""
        tracker = _tracker()
        tracker.open_window(1, T0)
        tracker.close_window("soak/w0001", T0 + 10**9)
        tracker.open_window(2, T0 + 2 * 10**9)
        list(tracker._handle(_request("soak/w0001", "straggler")))
        assert tracker.close_window("soak/w0002", T0 + 3 * 10**9).issued == 0
