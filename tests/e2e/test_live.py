"""A real short soak with `--serve`, watched in headless Chromium as a person would: the numbers move, the
page survives a server restart mid-run, and after the run it shows the final verdicts. The soak is
tests/conftest.py's `killed_soak` (tests/e2e/killed_soak.py), whose journal tests/e2e/test_soak.py judges."""

from __future__ import annotations

import re

import pytest
from browser import Browser
from killed_soak import KilledSoak

pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(480)]


class TestLivePage:
    def test_a_person_watches_a_soak_through_a_restart_to_its_verdicts(self, browser: Browser,
                                                                       killed_soak: KilledSoak) -> None:
        """Headless Chromium on `--serve`: issued requests count up, in flight follows the server's own gauge,
        a killed server shows as a restart with its cause while the counts go on, and once the run ends the page
        lists the final verdicts."""
        page = killed_soak.page
        assert page is not None  # the browser fixture is there: the soak was watched
        assert page.failure is None, (page, killed_soak.out[-3000:])
        assert page.counted_before_kill and page.counted_after_restart, page
        assert (page.in_flight, page.in_flight_source) == ("1", "(server gauge)"), page
        gauge = [e["in_flight"] for e in killed_soak.events if e["kind"] == "server_load_sampled"]
        assert 0 in gauge and 1 in gauge and max(gauge) <= 1, gauge  # up and down, never above the concurrency
        # ServerRestarting names the incarnation it starts (2) and why the last one ended.
        assert "incarnation 2 attempt 1" in page.causes and "killed by SIGKILL" in page.causes, page.causes
        assert killed_soak.returncode == 1, killed_soak.out[-3000:]  # the restart verdict fails: the server was killed
        assert page.status == "failed", page.status
        shown = {row[0]: row for row in page.verdicts}
        assert shown["restarts"][1:3] == ["FAIL", "final"], shown
        assert {"server_rss", "error_rate", "accounting"} <= set(shown), shown
        assert all(row[2] == "final" for row in page.verdicts), page.verdicts
        # What it can detect: a slope beyond the interval's half-width, or nothing yet (no interval).
        assert re.search(r"^(a slope beyond ±\S+|nothing yet: no interval on the slope) .*MiB/h", shown["server_rss"][7]), \
            shown["server_rss"]
