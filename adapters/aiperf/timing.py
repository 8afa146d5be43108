"""AIPerf's request-rate timing strategy with what aqbench asks for by environment variable (no-spin wait,
handover, phase gates). Loaded by AIPerf's timing manager (plugins.yaml); imports AIPerf, nothing imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiperf.common.enums import CreditPhase
from aiperf.common.environment import Environment
from aiperf.common.utils import yield_to_event_loop
from aiperf.credit.messages import FirstToken
from aiperf.credit.structs import Credit
from aiperf.plugin.enums import ArrivalPattern
from aiperf.timing.strategies.request_rate import RequestRateStrategy as _AiperfRateStrategy

from adapters.aiperf.handover_files import (
    GATE,
    GO,
    HALT,
    HALTED,
    HANDOVER_DIR_ENV,
    LIMIT,
    PHASE_GATES_ENV,
    POLL_S,
    READY,
    SKIP,
    TIMING_WAIT_ENV,
    phase_file,
    read_int,
    write_atomic,
)

# Entry point group `aiperf.plugins` (`timing_strategy: request_rate` in plugins.yaml); a package's entry beats
# AIPerf's built-in one. With none of the variables set, building the strategy returns AIPerf's own class, untouched:
# a plain AIPerf run is exactly stock.
__all__ = ["HandoverFolder", "PhaseGate", "PhaseHalt", "RequestRateStrategy", "asked"]

_BACKSTOP_S = 0.01


def asked(environ: Mapping[str, str]) -> bool:
    """Whether aqbench asked for either feature; else AIPerf's own strategy runs."""
    return (environ.get(TIMING_WAIT_ENV) == "1" or bool(environ.get(HANDOVER_DIR_ENV))
            or bool(environ.get(PHASE_GATES_ENV)))


class PhaseGate:
    """One gated phase's files in the gates folder: `ready` written on arrival, then `go` or `skip` awaited."""

    def __init__(self, folder: Path, phase: str) -> None:
        self.folder, self.phase = folder, phase

    @classmethod
    def of(cls, folder: str | None, phase: str | None) -> PhaseGate | None:
        """The phase's gate, None when the phase is not gated (no folder, no name, or no `gate.<name>`)."""
        if not folder or not phase or not (Path(folder) / phase_file(GATE, phase)).exists():
            return None
        return cls(Path(folder), phase)

    async def wait(self) -> bool:
        """Write `ready.<phase>`, then wait for `go.<phase>` (True) or `skip.<phase>` (False)."""
        write_atomic(self.folder / phase_file(READY, self.phase), str(time.time_ns()))
        go, skip = self.folder / phase_file(GO, self.phase), self.folder / phase_file(SKIP, self.phase)
        while True:
            if skip.exists():
                return False
            if go.exists():
                return True
            await asyncio.sleep(POLL_S)


class PhaseHalt:
    """One profiling phase's `halt.<name>` in the gates folder, looked at while the phase runs."""

    def __init__(self, folder: Path, phase: str) -> None:
        self.folder, self.phase = folder, phase

    @classmethod
    def of(cls, folder: str | None, phase: str | None) -> PhaseHalt | None:
        return cls(Path(folder), phase) if folder and phase else None

    def asked(self) -> bool:
        return (self.folder / phase_file(HALT, self.phase)).exists()

    def write_halted(self, unix_ns: int, sent: int) -> None:
        write_atomic(self.folder / phase_file(HALTED, self.phase), json.dumps({"unix_ns": unix_ns, "sent": sent}))


class HandoverFolder:
    """The process's view of the handover folder: `go`, `halt` and `limit`, looked at by `refresh()`. Cheap:
    two stats and one more, and `limit` read only when its file changed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.gated = (folder / GATE).exists()
        self.go = False
        self.start_unix_ns: int | None = None  # what `go` holds: when the first request is due (rate mode)
        self.halt = False
        self.limit: int | None = None
        self._limit_stamp: tuple[int, int, int] | None = None

    def refresh(self) -> bool:
        """Look at the folder; returns whether `limit` changed."""
        if not self.go and (self.folder / GO).exists():
            self.go = True
            self.start_unix_ns = read_int(self.folder / GO)  # written whole (renamed over), so never torn
        self.halt = self.halt or (self.folder / HALT).exists()
        try:
            st = os.stat(self.folder / LIMIT)
        except FileNotFoundError:
            return False
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)  # a rename gives a new inode
        if stamp == self._limit_stamp:
            return False
        self._limit_stamp = stamp
        found = read_int(self.folder / LIMIT)
        if found is None or found == self.limit:
            return False
        self.limit = found
        return True

    def write_ready(self) -> None:
        write_atomic(self.folder / READY, str(time.time_ns()))

    def write_halted(self, unix_ns: int, sent: int, next_unix_ns: int | None = None) -> None:
        fact: dict[str, int] = {"unix_ns": unix_ns, "sent": sent}
        if next_unix_ns is not None:
            fact["next_unix_ns"] = next_unix_ns
        write_atomic(self.folder / HALTED, json.dumps(fact))


class RequestRateStrategy(_AiperfRateStrategy):  # type: ignore[misc]  # AIPerf is not type-checked here
    """AIPerf's strategy, with the no-spin wait and the handover control when aqbench asks.

    What aqbench asks for, by environment variable:

    1. `AQBENCH_TIMING_WAIT=1` (soaks): no spin in concurrency mode. AIPerf 0.13.0's loop
       (aiperf/timing/strategies/request_rate.py, `execute_phase`) retries a credit with `yield_to_event_loop()` while
       every slot is taken, so its timing manager spins until a request ends (bench/RESULTS.md: 52-84 % of a core at
       concurrency 2 on 2 cores; 8-10 % with this wait, bench/aiperf_timing.py). Here it waits on an event that a
       credit's return sets once its slot is released (AIPerf's `observe_credit_return` hook, called after the
       release), with a 10 ms backstop for a turn that arrives without a return (a delayed continuation). Only in
       concurrency mode (arrival pattern concurrency_burst): in rate mode a slot-less interval is skipped, as AIPerf
       does.
    2. `AQBENCH_HANDOVER_DIR=<dir>`: load control of the profiling phase through files there, for a soak's handover
       between two AIPerf processes (protocol: adapters/aiperf/handover.py). `ready` is written before the first
       profiling credit (gated or not); `gate`: then wait for `go` (in rate mode its unix ns, when given, is when the
       first request is due: the predecessor's next slot). `halt`: stop issuing, write `halted` (in rate mode with the
       schedule's next slot, unix ns), and end the phase as AIPerf ends one whose count is reached (sent counts
       frozen, the sending-complete event set), so the open requests finish, are recorded, and the run reads complete.
       `limit`: the session concurrency limit, through AIPerf's own dynamic limit (the one its concurrency ramp
       moves), never above --concurrency; rate mode ignores it.
    3. `AQBENCH_PHASE_GATES=<dir>`: gated phases of a phased run (a sweep's rerun that only a verdict can call for,
       written into the batch before the verdict exists). A phase (warmup or profiling) whose name has a `gate.<name>`
       file there writes `ready.<name>` and waits before its first credit for `go.<name>` (it then runs as configured,
       its schedule starting at `go`) or `skip.<name>` (it ends at once as a reached count does, nothing sent, and
       AIPerf goes on to the next phase or its end). Any profiling phase there, gated or not, is also watched for
       `halt.<name>` while it runs (a sweep's point that has clearly broken an SLO): it stops issuing, writes
       `halted.<name>` (unix ns and the count sent), and ends as a reached count does, so its open requests finish and
       are recorded, and AIPerf goes on to the next phase.

    The main loop is AIPerf 0.13.0's `execute_phase` (the version adapters/aiperf/install.py requires), with the
    spin's two yields and the handover checks changed; a new AIPerf needs this re-read.
    """

    # AIPerf builds its strategy with its own arguments (untyped here), passed through whole.
    def __new__(cls, *args: Any, **kwargs: Any) -> _AiperfRateStrategy:
        if not asked(os.environ):
            # Not an instance of this class, so Python runs no __init__ on it: build it whole here.
            return _AiperfRateStrategy(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # as __new__: AIPerf's own arguments
        super().__init__(*args, **kwargs)
        cfg = self._config
        self._closed_loop = cfg.arrival_pattern == ArrivalPattern.CONCURRENCY_BURST and cfg.concurrency is not None
        self._no_spin = self._closed_loop and os.environ.get(TIMING_WAIT_ENV) == "1"
        folder = os.environ.get(HANDOVER_DIR_ENV)
        self._handover = (HandoverFolder(Path(folder))
                          if folder and cfg.phase == CreditPhase.PROFILING else None)
        self._phase_gate = PhaseGate.of(os.environ.get(PHASE_GATES_ENV), cfg.phase_name)
        self._phase_halt = (PhaseHalt.of(os.environ.get(PHASE_GATES_ENV), cfg.phase_name)
                            if cfg.phase == CreditPhase.PROFILING else None)
        self._freed = asyncio.Event()
        self._halting = False
        self._next_slot_perf: float | None = None  # rate mode: when the schedule's next request is due
        self.info(f"aqbench timing strategy: phase {cfg.phase} {cfg.phase_name}, no-spin wait {self._no_spin}, "
                  f"handover folder {folder if self._handover else None}, gated {self._phase_gate is not None}")

    # -- the no-spin wait ------------------------------------------------------------------------------------
    def observe_credit_return(self, credit: Credit) -> None:
        """AIPerf calls this on every return, after releasing the credit's slots: a slot may be free."""
        self._freed.set()

    async def handle_first_token(self, first_token: FirstToken) -> None:
        """Called just before a prefill slot's release (with --prefill-concurrency), in the same step."""
        self._freed.set()

    async def handle_credit_return(self, credit: Credit, *, error: str | None = None) -> None:
        await super().handle_credit_return(credit, error=error)
        self._freed.set()  # a continuation turn may be queued

    async def _idle(self) -> None:
        """No slot (or no turn) now: AIPerf yields and retries at once (the spin); this waits for a return."""
        if not self._no_spin:
            await yield_to_event_loop()
            return
        self._freed.clear()  # nothing ran since the failed try, so no return is missed
        backstop = asyncio.get_running_loop().call_later(_BACKSTOP_S, self._freed.set)
        try:
            await self._freed.wait()
        finally:
            backstop.cancel()

    # -- the handover ----------------------------------------------------------------------------------------
    def _apply_limit(self, handover: HandoverFolder) -> None:
        if not self._closed_loop or handover.limit is None:
            return
        limit = max(0, min(handover.limit, self._config.concurrency))
        issuer = self._credit_issuer
        issuer._concurrency_manager.set_session_limit(issuer._phase_key, limit)
        self._freed.set()  # a raised limit frees a slot

    async def _watch(self, handover: HandoverFolder) -> None:
        """Every POLL_S: apply a changed limit; on `halt`, wake whichever wait the loop is in."""
        while not self._halting:
            await asyncio.sleep(POLL_S)
            if handover.refresh():
                self._apply_limit(handover)
            if handover.halt:
                self._begin_halt()

    def _begin_halt(self) -> None:
        """End the issuing loop: wake whichever wait it is in."""
        self._halting = True
        self._freed.set()
        self._rate_update_event.set()  # ends a rate-mode wait; the loop then sees the halt first

    async def _gate(self, handover: HandoverFolder) -> None:
        while not (handover.go or handover.halt):
            await asyncio.sleep(POLL_S)
            if handover.refresh():
                self._apply_limit(handover)

    def _halt(self, handover: HandoverFolder) -> None:
        """Stop issuing and end the phase as a reached count does: sent counts frozen, sending complete."""
        issuer = self._credit_issuer
        issuer.stop_issuing()
        now_ns, slot = time.time_ns(), self._next_slot_perf
        # The slot this process leaves (perf clock to unix), for its successor to take: the schedule runs on.
        next_ns = (now_ns + round((slot - time.perf_counter()) * 1e9)
                   if slot is not None and not self._closed_loop else None)
        handover.write_halted(now_ns, issuer._progress.counter.requests_sent, next_ns)
        issuer.signal_sending_complete()

    async def execute_phase(self) -> None:
        gated = False
        if self._phase_gate is not None:
            if not await self._phase_gate.wait():
                # Skipped: end the phase as a reached count does, with nothing sent (AIPerf then goes on).
                self._credit_issuer.stop_issuing()
                self._credit_issuer.signal_sending_complete()
                return
            gated = True
        handover = self._handover
        if handover is None and self._phase_halt is not None:
            await self._run_halting(self._phase_halt, gated=gated)
            return
        if handover is None:
            await self._run_loop(gated=gated)
            return
        handover.refresh()
        self._apply_limit(handover)
        handover.write_ready()  # also ungated: it says when the profiling phase is about to start
        if handover.gated:
            await self._gate(handover)
        if handover.halt:
            self._halt(handover)
            return
        watch = asyncio.ensure_future(self._watch(handover))
        try:
            await self._run_loop(gated=handover.gated, start_unix_ns=handover.start_unix_ns)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        if self._halting:
            self._halt(handover)

    async def _run_halting(self, halt: PhaseHalt, *, gated: bool) -> None:
        """The phase, ended early should aqbench write its `halt.<name>` while it runs (PhaseHalt)."""
        async def watch() -> None:
            while not self._halting:
                await asyncio.sleep(POLL_S)
                if halt.asked():
                    self._begin_halt()

        watcher = asyncio.ensure_future(watch())
        try:
            await self._run_loop(gated=gated)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        if self._halting:  # as a reached count ends a phase: sent counts frozen, the open requests still recorded
            issuer = self._credit_issuer
            issuer.stop_issuing()
            halt.write_halted(time.time_ns(), issuer._progress.counter.requests_sent)
            issuer.signal_sending_complete()

    def _first_target(self, gated: bool, start_unix_ns: int | None) -> float:
        """When the first request is due (perf clock). A handover's successor in rate mode takes the slot its
        `go` names, its predecessor's next (now, if that has passed); after any other gate the schedule starts
        at `go`, not at the phase's start (no catch-up burst); ungated, as AIPerf does."""
        if gated and start_unix_ns is not None and not self._closed_loop:
            return time.perf_counter() + max(0.0, (start_unix_ns - time.time_ns()) / 1e9)
        perf_start = time.perf_counter() if gated else self._lifecycle.started_at_perf_ns / 1e9
        return float(perf_start + self._rate_generator.next_interval())

    async def _run_loop(self, *, gated: bool, start_unix_ns: int | None = None) -> None:
        """AIPerf 0.13.0's execute_phase loop; changes marked `aqbench`."""
        if self._lifecycle.started_at_perf_ns is None:
            raise RuntimeError("started_at_perf_ns is not set in the lifecycle")
        next_target_perf = self._next_slot_perf = self._first_target(gated, start_unix_ns)  # aqbench
        next_new_session_turn = self._conversation_source.next().build_first_turn()
        self._pacer = self._create_high_res_pacer()
        try:
            while not self._halting:  # aqbench: a halt ends the loop
                now = time.perf_counter()
                if next_target_perf < now - Environment.TIMING.MAX_CATCHUP_SECONDS:
                    next_target_perf = now
                self._next_slot_perf = next_target_perf  # aqbench: the slot a halt leaves to the successor
                if self._rate_update_event.is_set():
                    next_target_perf = self._reschedule_for_rate_update(next_target_perf)
                    continue
                if await self._wait_until_next_target(next_target_perf, now):
                    if self._halting:  # aqbench: the halt ended the wait; the slot stays the successor's
                        return
                    next_target_perf = self._reschedule_for_rate_update(next_target_perf)
                    continue
                if self._halting:  # aqbench: halted during the wait
                    return
                next_target_perf += self._rate_generator.next_interval()
                self._next_slot_perf = next_target_perf  # aqbench
                if not self._continuation_turns.empty():
                    if not await self._credit_issuer.issue_credit(self._continuation_turns.get_nowait()):
                        return
                elif self._stop_checker.can_start_new_session():
                    result = await self._credit_issuer.try_issue_credit(next_new_session_turn)
                    if result is True:
                        next_new_session_turn = self._conversation_source.next().build_first_turn()
                    elif result is False:
                        return
                    else:
                        await self._idle()  # aqbench: was yield_to_event_loop() (the spin)
                elif not self._stop_checker.can_send_any_turn():
                    return
                else:
                    await self._idle()  # aqbench: was yield_to_event_loop() (the spin)
        finally:
            if self._pacer is not None:
                self._pacer.close()
                self._pacer = None
