"""The soak's supervision verdicts: `restarts` over every restart whatever decided it, `processes` over what is
left at the check (zombies counted before they are reaped), and the soak report agreeing with them."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TypeVar

import msgspec
import psutil
import pytest
from config_support import make_config
from soak_support import T0, _window

from orchestrator.events import (
    Event,
    OrphanReaped,
    ProcessCheck,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerRestarting,
    ServerSpawned,
    SoakLimits,
    SoakVerdict,
)
from orchestrator.events.verdicts import verdict_numbers
from orchestrator.reports.soak import fold_soak, render_soak_html, render_soak_markdown
from orchestrator.soak.leftovers import check_processes
from orchestrator.soak.supervision import SupervisionFacts, judge_processes, judge_restarts
from orchestrator.soak.verdicts import SoakEvidence, judge_soak

S = 10**9
E = TypeVar("E", bound=Event)
_PROBES = "2 readiness probes failed in a row; last: HTTP 503 {\"status\": \"not_ready\"}"


def _at(ev: E, t_s: float) -> E:
    """`ev` stamped `t_s` seconds after T0, as the bus would."""
    return msgspec.structs.replace(ev, ts_ns=T0 + int(t_s * S))


def _probe_restart(*, spawned: bool, cause: str = "unready") -> list:
    """A front end stopped for its 503 probes at 25.5 s and restarted (spawned at 26.6 s, or never)."""
    events = [ServerSpawned(incarnation=1, pid=10, argv=["front"]),
              _at(ServerExited(incarnation=1, pid=10, returncode=-15, signal="SIGTERM", expected=True, during="stop",
                               stopped_for=cause), 25.5),  # type: ignore[arg-type]
              _at(ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason=_PROBES,
                                   cause=cause), 26.5)]  # type: ignore[arg-type]
    return events + ([_at(ServerSpawned(incarnation=2, pid=11, argv=["front"]), 27.6)] if spawned else [])


def _facts(events: list) -> SupervisionFacts:
    facts = SupervisionFacts()
    for ev in events:
        facts.observe(ev)
    return facts


class TestRestartsVerdict:
    def test_a_restart_for_failed_probes_fails_with_its_cause(self) -> None:
        """No process exited on its own (the front end answers 503 and never exits): the verdict still FAILs,
        naming the cause, and dates the restart by its spawn (issue: it read "no unexpected server exit")."""
        facts = _facts(_probe_restart(spawned=True))
        v = judge_restarts(facts.exits, facts.restarts, origin_unix_ns=T0)
        assert v.outcome == "fail"
        assert v.reason.startswith("1 unplanned server end(s), 1 restart(s): incarnation 1 was stopped because "
                                   "readiness probes were answered 'not ready' at 25.5 s, restarted; incarnation 2 "
                                   "started at 27.6 s (readiness probes were answered 'not ready')")
        assert "a soak plans no restart" in v.reason

    def test_a_restart_decided_and_never_made_reads_as_such(self) -> None:
        """The soak ended during the backoff: the restart is said as decided, when, and that the run ended first."""
        facts = _facts(_probe_restart(spawned=False))
        v = judge_restarts(facts.exits, facts.restarts, origin_unix_ns=T0)
        assert v.outcome == "fail"
        assert ("restart to incarnation 2 decided at 26.5 s (readiness probes were answered 'not ready'); "
                "the run ended first") in v.reason

    def test_unanswered_probes_are_a_hang(self) -> None:
        facts = _facts(_probe_restart(spawned=True, cause="unresponsive"))
        assert "readiness probes went unanswered (a hang)" in judge_restarts(facts.exits, facts.restarts).reason

    def test_an_older_journals_restart_without_cause_still_fails(self) -> None:
        """A journal from before the causes: the stop for probes is a plain expected exit and the restart has no
        cause; the restart alone FAILs the verdict (an unplanned restart is never a pass)."""
        events = [ServerExited(incarnation=1, pid=10, returncode=-15, expected=True, during="stop"),
                  ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason="probes failed")]
        facts = _facts(events)
        assert facts.exits == []
        v = judge_restarts(facts.exits, facts.restarts)
        assert v.outcome == "fail" and "no cause was journaled" in v.reason

    def test_no_restart_passes(self) -> None:
        facts = _facts([ServerSpawned(incarnation=1, pid=10, argv=["front"]),
                        ServerExited(incarnation=1, pid=10, returncode=-2, expected=True, during="stop")])
        v = judge_restarts(facts.exits, facts.restarts)
        assert (v.outcome, v.reason) == ("pass", "no restart and no unplanned server end")

    def test_judge_soak_fails_restarts_on_a_probe_restart(self) -> None:
        """The soak's verdicts take the restarts: a probe restart with no exit FAILs `restarts`."""
        facts = _facts(_probe_restart(spawned=True))
        verdicts = judge_soak(SoakEvidence(windows=[_window(i, 300).summary for i in (1, 2, 3)], exits=facts.exits,
                                           restarts=facts.restarts), SoakLimits())
        [v] = [v for v in verdicts if v.metric == "restarts"]
        assert v.outcome == "fail" and v.detail is not None and v.detail.restart_events == facts.restarts  # type: ignore[union-attr]

    def test_soak_report_agrees_with_the_verdict(self) -> None:
        """soak.md and soak.html show the restart with its cause (decided, and when it was made or that it never
        was) beside the FAIL the verdict journaled."""
        for spawned, said in ((True, "incarnation 2 started at 27.6 s (decided at 26.5 s); cause: readiness probes "
                                     "were answered 'not ready'"),
                              (False, "restart decided at 26.5 s; the run ended first (incarnation 2 was never "
                                      "started); cause: readiness probes were answered 'not ready'")):
            server = _probe_restart(spawned=spawned)
            facts = _facts(server)
            v = judge_restarts(facts.exits, facts.restarts, origin_unix_ns=T0)
            slope, interval, limit, unit = verdict_numbers(v.detail)
            events = [_at(RunStarted(command="soak", config=make_config(soak={"window_s": 15.0})), 0), _window(1, 300),
                      *server, SoakVerdict(metric="restarts", passed=False, outcome="fail", final=True,
                                           reason=v.reason, detail=v.detail, windows_closed=1),
                      RunFinished(status="failed")]
            report = fold_soak(events)
            md, html = render_soak_markdown(report), render_soak_html(report)
            assert "Soak FAILED (restarts)" in md and "| restarts | FAIL | final |" in md
            assert f"- {said}" in md and said.replace("'", "&#x27;") in html
            assert ("Restarts: 1" + ("" if spawned else " (1 decided and never made: the run ended first)")) in md
            assert (slope, interval, limit, unit) == (None, None, None, "")


class TestProcessesVerdict:
    def test_a_zombie_child_at_the_check_fails(self, tmp_path: Path) -> None:
        """A child of ours that ended and was never reaped is a zombie at the check: counted (before the check's
        own wait collects it) and the verdict FAILs (issue: it read "no orphaned, leftover or zombie process")."""
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], dict(os.environ))
        deadline = time.monotonic() + 10
        while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child never ended"
            time.sleep(0.01)
        check = check_processes(tmp_path, orphans_killed=0, wait_s=0.5)
        assert [z.split(":")[0] for z in check.zombies] == [f"pid {pid}"] and "<defunct>" in check.zombies[0]
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE  # reaped
        v = judge_processes(check)
        assert v.outcome == "fail" and v.reason.startswith(f"1 zombie(s): pid {pid}")

    def test_orphans_reaped_dead_are_said_not_failed(self) -> None:
        """A worker that died with its server and was reaped left nothing behind: counted and said, a PASS."""
        facts = _facts([OrphanReaped(incarnation=1, pid=77, name="python3", returncode=-15, found_by="sample")])
        v = judge_processes(ProcessCheck(orphans_reaped=facts.orphans_reaped))
        assert v.outcome == "pass"
        assert v.reason == ("no orphaned, leftover or zombie process (1 escaped server process(es) had died and were "
                            "reaped: pid 77: python3 (exit -15))")

    @pytest.mark.parametrize("check", [ProcessCheck(leftover=["pid 5: sleep"]), ProcessCheck(orphans_killed=1)])
    def test_leftovers_and_killed_orphans_fail(self, check: ProcessCheck) -> None:
        assert judge_processes(check).outcome == "fail"



