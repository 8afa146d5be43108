"""The soak loop's side of a handover (orchestrator/soak/handover_cue.py has the rule): when the cue says so,
launch a gated successor for the rest of the segment, wait until it is ready, swap, journal `SoakHandover`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from orchestrator.base.figures import figure
from orchestrator.config import Config, ModelConfig
from orchestrator.events import NoticeContext, SoakHandover, Warned
from orchestrator.soak.handover_cue import HandoverCue, swap
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.soak.progress import LoadProgress
from orchestrator.soak.segment import Exit, Launch, SegmentRuns
from orchestrator.soak.settings import SoakSettings
from orchestrator.spine.logs import get_logger
from orchestrator.spine.ports import AiperfFacts, AiperfInvocation, EventSink, HandoverControl, Toolkit
from orchestrator.spine.race import first_of

__all__ = ["READY_TIMEOUT_S", "HandingSoak", "run_handovers"]

log = get_logger("aqbench.soak")

# The longest a successor may take from launch to ready (AIPerf's start-up: 5 s alone, 10 s and more on a
# busy 2-core host); it also pads the successor's --benchmark-duration, whose clock runs while it is gated.
READY_TIMEOUT_S = 60.0
# No handover when less than this is left of the segment (a successor must start up within it).
_MIN_REST_S = 10.0
# How long the predecessor may take to finish its open requests and be judged after its halt.
_FINISH_S = 120.0


class HandingSoak(Protocol):
    """What a handover needs of the soak that runs it (orchestrator/soak/loop.py's soak): its settings and
    load's progress, the runs it has stopped, and how it names, builds and starts an AIPerf run."""

    cfg: Config
    model: ModelConfig
    settings: SoakSettings
    toolkit: Toolkit
    progress: LoadProgress
    stopped_at: dict[str, int]
    decided: list[MetricVerdict]
    aiperf_name: str

    @property
    def bus(self) -> EventSink: ...

    def next_run(self) -> tuple[str, Path]: ...

    async def command(self, launch: Launch, folder: Path, length_s: float, *, warmup: int,
                      control: HandoverControl, shift: int) -> AiperfInvocation: ...

    def start_run(self, tg: TaskGroup, sg: SegmentRuns, seg: int, name: str, cmd: AiperfInvocation,
                  control: HandoverControl, install: AiperfFacts, *, deadline_s: float) -> None: ...


# A successor that does not become ready in time is stopped and the predecessor keeps sending (warned; the cue
# tries again later). At the segment's planned end a successor still sending is halted, so it ends as a
# complete run as the first run does by its --benchmark-duration.
async def run_handovers(soak: HandingSoak, scope: anyio.CancelScope, tg: TaskGroup, sg: SegmentRuns, seg: int,
                        first_ns: int, launch: Launch) -> None:
    """Hand over whenever the cue says so while the segment goes on; halt a successor at the segment's end."""
    s = soak.settings
    cue = HandoverCue(mib=s.handover_mib, every_s=s.handover_every_s)
    cue.follow(soak.progress.aiperf_pids.get(sg.sending), first_ns)
    assert sg.end_ns is not None
    with scope:
        while True:
            await anyio.sleep(1.0)
            if (sample := soak.progress.aiperf_sample) is not None:
                cue.observe(*sample)
            now = time.time_ns()
            if (sg.end_ns - now) / 1e9 < _MIN_REST_S or soak.decided:
                break  # a decided soak's load is halted: no successor
            why = cue.due(now)
            if not why or sg.sending not in sg.live:
                continue
            first = await _hand_over(soak, tg, sg, seg, why, launch)
            cue.follow(soak.progress.aiperf_pids.get(sg.sending), first or time.time_ns())
        await anyio.sleep(max(0.0, (sg.end_ns - time.time_ns()) / 1e9))
        if sg.sending != sg.names[0] and sg.sending in sg.live:
            sg.controls[sg.sending].halt()  # a successor's duration is padded: the segment ends it on time


async def _ready(soak: HandingSoak, name: str, control: HandoverControl, exited: Exit, wait_s: float) -> int | None:
    """When the gated successor is ready (unix ns), or None: it exited, took over `wait_s`, or sent a
    profiling request before `go` (the gate is not in force: then it must stop at once, or the load doubles)."""
    ready: list[int] = []

    async def wait() -> None:
        ready.append(await control.wait_ready())

    with anyio.move_on_after(wait_s):
        await first_of(lambda: soak.progress.wait_first_profiling(name), wait, exited.wait)
    sent = name in soak.progress.first_profiling_ns
    return ready[0] if ready and not exited.is_set() and not sent else None


async def _hand_over(soak: HandingSoak, tg: TaskGroup, sg: SegmentRuns, seg: int, why: str, launch: Launch) -> int | None:
    """One handover; returns the successor's first request start (None: it did not take over)."""
    assert sg.end_ns is not None
    w, pred = soak.cfg.workload, sg.sending
    name, folder = soak.next_run()
    control = await anyio.to_thread.run_sync(
        lambda: soak.toolkit.aiperf.handover_control(folder / "handover", gated=True))
    rest_s = max(1.0, (sg.end_ns - time.time_ns()) / 1e9)
    # Its input goes on about where the load stands (what the predecessor sent by now; the rows cycle).
    shift = launch.sent_before + sum(soak.progress.ledger(n).seen for n in sg.names)
    cmd = await soak.command(launch, folder, rest_s + READY_TIMEOUT_S, warmup=0, control=control, shift=shift)
    soak.start_run(tg, sg, seg, name, cmd, control, launch.install,
                    deadline_s=rest_s + READY_TIMEOUT_S + w.request_timeout_s + w.deadline_s)
    # Ready before the segment's end (less a second to swap), or not at all.
    wait_s = min(READY_TIMEOUT_S, (sg.end_ns - time.time_ns()) / 1e9 - 1.0)
    ready = await _ready(soak, name, control, sg.exits[name], wait_s)
    if ready is None and name in sg.abandoned:
        return None  # the soak was decided while it waited at its gate; the look stopped it and said so
    if ready is None:
        sg.stops[name].set()
        ungated = name in soak.progress.first_profiling_ns
        if not ungated:
            sg.abandoned.add(name)  # it sent nothing: no run to account
        else:
            soak.stopped_at[name] = time.time_ns()  # SIGINT drops its open requests: a shortfall, not a loss
        what = ("sent a profiling request before it was let go (the gate is not in force: is aqbench's AIPerf "
                "plugin the one AIPerf loads?); it is stopped and its requests are accounted" if ungated
                else f"did not become ready within {figure(wait_s)} s")
        await soak.bus.publish(Warned(
            source="soak", code="soak_handover_failed", detail=NoticeContext(model=soak.model.name),
            message=f"AIPerf run {name} {what} ({why}): {pred} keeps sending; the handover is tried again later"))
        return None
    sg.send(name)  # before the swap: its requests count in the windows from the first
    soak.aiperf_name = name  # aiperf_rss follows the sending process
    done = await swap(sg.controls[pred], control, soak.progress.ledger(pred), concurrency=soak.settings.concurrency)
    with anyio.move_on_after(_FINISH_S):
        await sg.finished[pred].wait()
    if done.sent is not None:
        with anyio.move_on_after(5.0):
            await soak.progress.wait_all_seen(pred, done.sent)
    first: int | None = None
    with anyio.move_on_after(10.0):
        first = await soak.progress.wait_first_profiling(name)
    last = soak.progress.last_profiling_ns.get(pred)
    answered = soak.progress.last_answer_ns.get(pred)
    # Time with no request in flight, as at a window cut: from the predecessor's last answer (not its last
    # start: in concurrency mode the successor waits for the requests still open, and the load never stops).
    gap = max(0.0, (first - answered) / 1e9) if first and answered else None
    log.info("soak_handover", predecessor=pred, successor=name, gap_s=gap, reason=why)
    await soak.bus.publish(SoakHandover(
        source="soak", predecessor=pred, successor=name, segment=seg, reason=why, ready_unix_ns=ready,
        halt_unix_ns=done.halt_ns, go_unix_ns=done.go_ns, last_request_unix_ns=last,
        last_answer_unix_ns=answered, first_request_unix_ns=first,
        gap_s=None if gap is None else round(gap, 6), sent=done.sent, over_target=done.over_target,
        due_unix_ns=done.due_ns))
    return first
