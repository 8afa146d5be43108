"""The soak's verdicts on the server's supervision (`restarts`, `processes`): pure rules over journaled facts,
and the fold of the supervisor's events into those facts. No I/O, no clock; callable at any window's close.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from orchestrator.events import (
    RESTART_CAUSES,
    AnyEvent,
    OrphanKilled,
    OrphanReaped,
    ProcessCheck,
    RestartDetail,
    RestartFact,
    ServerExited,
    ServerExitFact,
    ServerRestarting,
    ServerSpawned,
)
from orchestrator.judge.outcome import FAIL, PASS
from orchestrator.soak.metric_verdict import MetricVerdict

__all__ = ["SupervisionFacts", "judge_restarts", "judge_processes", "RESTART_POLICY"]

# The stated policy: a soak plans no restart (nothing in aqbench restarts a healthy server), so every restart,
# whatever decided it, and every end of an incarnation the run did not ask for is a FAIL.
RESTART_POLICY = "a soak plans no restart: any restart or unplanned end of the server fails this verdict"


class SupervisionFacts:
    """Folds the supervisor's journaled events into what the two verdicts judge: every unplanned end of an
    incarnation (an exit of its own, or a stop the supervisor decided for failed probes), every restart decided
    with its cause and the spawn that made it (if any), and the orphans killed or reaped. One entry per
    incarnation or orphan: bounded by the server's life, not by requests."""

    def __init__(self) -> None:
        self.exits: list[ServerExitFact] = []
        self.restarts: list[RestartFact] = []
        self.orphans_killed = 0
        self.orphans_reaped: list[str] = []

    def observe(self, ev: AnyEvent) -> None:
        """Take one event (any kind; those of no concern are ignored)."""
        if isinstance(ev, ServerExited):
            cause = "exited" if not ev.expected else ev.stopped_for
            if cause:
                self.exits.append(ServerExitFact(incarnation=ev.incarnation, returncode=ev.returncode,
                                                 signal=ev.signal, unix_ns=ev.ts_ns,
                                                 output_tail=list(ev.output_tail[-5:]), cause=cause))
        elif isinstance(ev, ServerRestarting):
            self.restarts.append(RestartFact(incarnation=ev.incarnation, cause=ev.cause, reason=ev.reason,
                                             decided_unix_ns=ev.ts_ns))
            if self.exits:
                self.exits[-1] = msgspec.structs.replace(self.exits[-1], restarted=True)
        elif isinstance(ev, ServerSpawned):
            for i, r in enumerate(self.restarts):
                if r.incarnation == ev.incarnation and not r.spawned_unix_ns:
                    self.restarts[i] = msgspec.structs.replace(r, spawned_unix_ns=ev.ts_ns)
        elif isinstance(ev, OrphanKilled):
            self.orphans_killed += 1
        elif isinstance(ev, OrphanReaped):
            self.orphans_reaped.append(f"pid {ev.pid}: {ev.name or '?'}"
                                       + (f" (exit {ev.returncode})" if ev.returncode is not None else ""))


def _at(unix_ns: int, origin_unix_ns: int | None) -> str:
    return f" at {(unix_ns - origin_unix_ns) / 1e9:.1f} s" if origin_unix_ns and unix_ns else ""


def _end_text(e: ServerExitFact, origin_unix_ns: int | None) -> str:
    then = _at(e.unix_ns, origin_unix_ns) + (", restarted" if e.restarted else ", not restarted")
    if e.cause in ("exited", ""):
        how = f"code {e.returncode}{', ' + e.signal if e.signal else ''}"
        return f"incarnation {e.incarnation} exited ({how}){then}"
    return f"incarnation {e.incarnation} was stopped because {RESTART_CAUSES.get(e.cause, e.cause)}{then}"


def _restart_text(r: RestartFact, origin_unix_ns: int | None) -> str:
    why = RESTART_CAUSES.get(r.cause, r.cause)
    if not r.spawned_unix_ns:
        return f"restart to incarnation {r.incarnation} decided{_at(r.decided_unix_ns, origin_unix_ns)} ({why}); " \
               "the run ended first"
    return f"incarnation {r.incarnation} started{_at(r.spawned_unix_ns, origin_unix_ns)} ({why})"


def judge_restarts(exits: Sequence[ServerExitFact], restarts: Sequence[RestartFact], *,
                   origin_unix_ns: int | None = None) -> MetricVerdict:
    """`restarts` under RESTART_POLICY: FAIL on any unplanned end of an incarnation or any restart decided,
    whatever decided it (an exit, readiness probes answered 'not ready', probes unanswered, a start-up that
    failed); PASS otherwise. The facts are complete when journaled, so the rule never waits for evidence:
    its answer at a window's close is final for what happened so far. `origin_unix_ns` (the soak's start)
    puts times in the reason."""
    detail = RestartDetail(unexpected_exits=list(exits), restarts=len(restarts), restart_events=list(restarts))
    if not exits and not restarts:
        return MetricVerdict(metric="restarts", outcome=PASS, detail=detail,
                             reason="no restart and no unplanned server end")
    parts = [_end_text(e, origin_unix_ns) for e in exits]
    parts += [_restart_text(r, origin_unix_ns) for r in restarts]
    ended = f"{len(exits)} unplanned server end(s), {len(restarts)} restart(s)"
    return MetricVerdict(metric="restarts", outcome=FAIL, detail=detail,
                         reason=f"{ended}: {'; '.join(parts)} ({RESTART_POLICY})")


def judge_processes(check: ProcessCheck) -> MetricVerdict:
    """`processes`: FAIL while any process of the run is left alive or a zombie at the check, or an orphan had
    to be killed; orphans that had died already and were reaped are said, not failed (nothing was left)."""
    problems = []
    if check.orphans_killed:
        problems.append(f"{check.orphans_killed} orphaned server process(es) had to be killed")
    if check.leftover:
        problems.append(f"{len(check.leftover)} process(es) still alive: {'; '.join(check.leftover[:5])}")
    if check.zombies:
        problems.append(f"{len(check.zombies)} zombie(s): {'; '.join(check.zombies[:5])}")
    reaped = (f"{len(check.orphans_reaped)} escaped server process(es) had died and were reaped: "
              f"{'; '.join(check.orphans_reaped[:5])}") if check.orphans_reaped else ""
    if problems:
        return MetricVerdict(metric="processes", outcome=FAIL, detail=check,
                             reason="; ".join(problems + ([reaped] if reaped else [])))
    return MetricVerdict(metric="processes", outcome=PASS, detail=check,
                         reason="no orphaned, leftover or zombie process" + (f" ({reaped})" if reaped else ""))
