"""The handover file protocol, both sides in-process: aqbench's (the files it writes, whole, and reads, and the
variables a command gets) and AIPerf's (aqbench's timing strategy, with stand-ins for AIPerf's credit issuer):
stock unless asked, no spin, gate, limit, halt. Real AIPerf processes: test_aiperf_timing.py."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from aiperf.common.enums import CreditPhase
from aiperf.plugin import plugins
from aiperf.plugin.enums import ArrivalPattern, PluginType, TimingMode
from aiperf.timing.config import CreditPhaseConfig
from aiperf.timing.strategies.request_rate import RequestRateStrategy as AiperfRateStrategy

from adapters.aiperf import timing
from adapters.aiperf.command import build_command
from adapters.aiperf.gates import FileGates
from adapters.aiperf.handover import FileHandover
from adapters.aiperf.handover_files import write_atomic
from orchestrator.commands.wiring import real_toolkit
from orchestrator.config import WorkloadConfig
from orchestrator.spine.ports import HaltFact, HandoverControl, PhaseGates

pytestmark = pytest.mark.inprocess


def test_the_toolkit_hands_a_control_whose_gate_and_env_a_command_carries(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    control: HandoverControl = real_toolkit().aiperf.handover_control(folder, gated=True)
    assert control.folder == folder.resolve() and (folder / "gate").exists()
    assert control.env() == {"AQBENCH_HANDOVER_DIR": str(folder.resolve())}
    cmd = build_command(WorkloadConfig(), base_url="http://127.0.0.1:9", model="m", input_file=tmp_path / "in",
                        artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok", executable="aiperf",
                        control=control, timing_wait=True)
    assert cmd.env["AQBENCH_HANDOVER_DIR"] == str(folder.resolve()) and cmd.env["AQBENCH_TIMING_WAIT"] == "1"
    assert "AQBENCH_HANDOVER_DIR=" in cmd.shell and "AQBENCH_TIMING_WAIT=1" in cmd.shell
    # AIPerf's own timing (the default waits): then nothing of aqbench's handover or timing reaches AIPerf.
    plain = build_command(WorkloadConfig(timing="stock"), base_url="http://127.0.0.1:9", model="m",
                          input_file=tmp_path / "in",
                          artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok", executable="aiperf")
    assert not any(k.startswith(("AQBENCH_HANDOVER", "AQBENCH_TIMING")) for k in plain.env)


def test_an_ungated_control_writes_no_gate_and_clears_files_of_an_earlier_use(tmp_path: Path) -> None:
    for name in ("gate", "ready", "go", "halt", "halted", "limit"):
        (tmp_path / name).write_text("1")
    control = FileHandover(tmp_path, gated=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert control.halted() is None


def test_go_halt_and_limit_are_whole_files_and_halted_reads_back(tmp_path: Path) -> None:
    control = FileHandover(tmp_path, gated=True)
    control.set_limit(0)
    control.set_limit(3)
    control.go()
    control.halt()
    assert (tmp_path / "limit").read_text() == "3" and (tmp_path / "go").exists() and (tmp_path / "halt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ValueError, match="in_flight"):
        control.set_limit(-1)
    write_atomic(tmp_path / "halted", '{"unix_ns": 1700000000000000000, "sent": 41}')
    assert control.halted() == HaltFact(unix_ns=1_700_000_000_000_000_000, sent=41)


@pytest.mark.anyio
async def test_wait_ready_returns_the_unix_ns_the_process_wrote(tmp_path: Path) -> None:
    control = FileHandover(tmp_path, gated=True)
    written = time.time_ns()

    async def process_side() -> None:
        await anyio.sleep(0.05)
        write_atomic(tmp_path / "ready", str(written))

    async with anyio.create_task_group() as tg:
        tg.start_soon(process_side)
        with anyio.fail_after(5):
            assert await control.wait_ready() == written


# -- AIPerf's side: aqbench's timing strategy, in-process with stand-ins for AIPerf's issuer (the real runs:
# test_aiperf_timing.py) --------------------------------------------------------------------------------------


class _Issuer:
    """AIPerf's CreditIssuer as the strategy uses it: `slots` free slots; a credit takes one."""

    def __init__(self, slots: int) -> None:
        self.slots, self.tries = slots, 0
        self.tried_ns: list[int] = []  # wall clock of each try
        self.limits: list[int] = []
        self.stopped = self.sending_complete = False
        self._phase_key = CreditPhase.PROFILING
        self._progress = SimpleNamespace(counter=SimpleNamespace(requests_sent=0))
        self._concurrency_manager = SimpleNamespace(set_session_limit=lambda key, n: self.limits.append(n))

    async def try_issue_credit(self, turn: object) -> bool | None:
        self.tries += 1
        self.tried_ns.append(time.time_ns())
        if self.stopped or self.slots == 0:
            return None
        self.slots -= 1
        self._progress.counter.requests_sent += 1
        return True

    def stop_issuing(self) -> None:
        self.stopped = True

    def signal_sending_complete(self) -> None:
        self.sending_complete = True


def _strategy(issuer: _Issuer, *, rate: float | None = None, name: str | None = None,
              phase: CreditPhase = CreditPhase.PROFILING) -> object:
    cfg = CreditPhaseConfig(phase=phase, phase_name=name, timing_mode=TimingMode.REQUEST_RATE, concurrency=2,
                            request_rate=rate, arrival_pattern=(ArrivalPattern.CONSTANT if rate
                                                                else ArrivalPattern.CONCURRENCY_BURST))
    source = SimpleNamespace(next=lambda: SimpleNamespace(build_first_turn=lambda: "turn"))
    stop = SimpleNamespace(can_start_new_session=lambda: True, can_send_any_turn=lambda: True)
    lifecycle = SimpleNamespace(started_at_perf_ns=time.perf_counter_ns())
    cls = plugins.get_class(PluginType.TIMING_STRATEGY, "request_rate")
    return cls(config=cfg, conversation_source=source, scheduler=None, stop_checker=stop, credit_issuer=issuer,
               lifecycle=lifecycle)


def test_aiperf_resolves_request_rate_to_aqbench_and_gets_its_own_strategy_unless_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert plugins.get_class(PluginType.TIMING_STRATEGY, "request_rate") is timing.RequestRateStrategy
    for name in ("AQBENCH_TIMING_WAIT", "AQBENCH_HANDOVER_DIR", "AQBENCH_PHASE_GATES"):
        monkeypatch.delenv(name, raising=False)
    assert type(_strategy(_Issuer(2))) is AiperfRateStrategy
    monkeypatch.setenv("AQBENCH_TIMING_WAIT", "1")
    assert type(_strategy(_Issuer(2))) is timing.RequestRateStrategy


async def _run_for(strategy: object, seconds: float) -> None:
    with anyio.move_on_after(seconds):
        await strategy.execute_phase()  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.parametrize("wait", [False, True])
async def test_with_every_slot_taken_aiperf_spins_and_aqbench_waits_for_a_return(
        monkeypatch: pytest.MonkeyPatch, wait: bool) -> None:
    """AIPerf retries a credit at once while no slot is free (thousands of tries in 0.2 s); with the wait, a
    try follows a return (or the 10 ms backstop), and a return's freed slot is taken at once."""
    for name in ("AQBENCH_TIMING_WAIT", "AQBENCH_HANDOVER_DIR"):
        monkeypatch.delenv(name, raising=False)
    if wait:
        monkeypatch.setenv("AQBENCH_TIMING_WAIT", "1")
    issuer = _Issuer(2)
    strategy = _strategy(issuer)
    await _run_for(strategy, 0.2)
    assert issuer.slots == 0
    if not wait:
        assert issuer.tries > 1000
        return
    assert issuer.tries <= 2 + 0.2 / 0.01 + 2
    issuer.slots, tries = 1, issuer.tries

    async def a_return() -> None:
        await anyio.sleep(0.05)
        issuer.slots += 1
        strategy.observe_credit_return(None)  # type: ignore[attr-defined]

    async with anyio.create_task_group() as tg:
        tg.start_soon(a_return)
        await _run_for(strategy, 0.1)
    assert issuer.slots == 0 and issuer.tries - tries <= 2 + 0.1 / 0.01 + 2


@pytest.mark.anyio
async def test_gate_limit_and_halt_through_the_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Gated: `ready` written, nothing issued before `go`; `limit` reaches AIPerf's session limit (capped at
    --concurrency); `halt` stops issuing, writes `halted` and completes the phase's sending."""
    control = FileHandover(tmp_path, gated=True)
    control.set_limit(0)
    monkeypatch.setenv("AQBENCH_HANDOVER_DIR", str(tmp_path))
    issuer = _Issuer(5)
    strategy = _strategy(issuer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(strategy.execute_phase)  # type: ignore[attr-defined]
        with anyio.fail_after(5):
            ready = await control.wait_ready()
            await anyio.sleep(0.05)
            assert issuer.tries == 0 and issuer.limits == [0]
            control.set_limit(7)
            while issuer.limits[-1:] != [2]:
                await anyio.sleep(0.005)
            control.go()
            while issuer.slots:
                await anyio.sleep(0.005)
            control.halt()
            while control.halted() is None:
                await anyio.sleep(0.005)
    fact = control.halted()
    assert fact is not None and fact.sent == 5 and fact.unix_ns > ready
    assert issuer.stopped and issuer.sending_complete


def test_the_folder_view_reads_a_changed_limit_once(tmp_path: Path) -> None:
    view = timing.HandoverFolder(tmp_path)
    assert not view.gated and not view.refresh() and view.limit is None
    write_atomic(tmp_path / "limit", "1")
    assert view.refresh() and view.limit == 1 and not view.refresh()
    write_atomic(tmp_path / "limit", "1")
    assert not view.refresh()
    write_atomic(tmp_path / "limit", "2")
    write_atomic(tmp_path / "go", "")
    assert view.refresh() and view.limit == 2 and view.go and not view.halt


@pytest.mark.anyio
async def test_rate_mode_ignores_the_limit_and_a_halt_ends_its_wait_for_the_next_send(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    control = FileHandover(tmp_path, gated=False)
    control.set_limit(0)
    monkeypatch.setenv("AQBENCH_HANDOVER_DIR", str(tmp_path))
    issuer = _Issuer(100)
    started_ns = time.time_ns()
    strategy = _strategy(issuer, rate=0.5)  # the first send 2 s after the phase's start
    async with anyio.create_task_group() as tg:
        tg.start_soon(strategy.execute_phase)  # type: ignore[attr-defined]
        with anyio.fail_after(5):
            await anyio.sleep(0.1)
            control.halt()
            halted_at = time.monotonic()
            while control.halted() is None:
                await anyio.sleep(0.005)
    assert time.monotonic() - halted_at < 0.5 and issuer.limits == []
    fact = control.halted()
    assert fact is not None and fact.sent == 0 and issuer.tries == 0 and issuer.sending_complete
    # The slot it leaves to a successor: its first send, 2 s after the phase's start (not issued).
    assert fact.next_unix_ns is not None and abs(fact.next_unix_ns - (started_ns + 2_000_000_000)) < 100_000_000


@pytest.mark.anyio
async def test_rate_mode_successor_takes_the_slot_its_go_names(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """A gated rate-mode successor let go with a start time sends its first request then, not one interval
    (2 s at 0.5/s) after `go`: the schedule runs on across a handover. Without a start time, one interval."""
    monkeypatch.setenv("AQBENCH_HANDOVER_DIR", str(tmp_path))
    for start_in_s in (0.3, None):
        control = FileHandover(tmp_path, gated=True)
        issuer = _Issuer(100)
        strategy = _strategy(issuer, rate=0.5)
        async with anyio.create_task_group() as tg:
            tg.start_soon(strategy.execute_phase)  # type: ignore[attr-defined]
            with anyio.fail_after(5):
                await control.wait_ready()
                go_ns = time.time_ns()
                control.go(None if start_in_s is None else go_ns + round(start_in_s * 1e9))
                while not issuer.tried_ns:
                    await anyio.sleep(0.005)
                control.halt()
                while control.halted() is None:
                    await anyio.sleep(0.005)
        first_s = (issuer.tried_ns[0] - go_ns) / 1e9
        assert abs(first_s - (start_in_s or 2.0)) < 0.08, (start_in_s, first_s)
        fact = control.halted()
        # Its own next slot runs on from the first: one interval (2 s) after it.
        assert fact is not None and fact.sent == 1 and fact.next_unix_ns is not None
        assert abs((fact.next_unix_ns - issuer.tried_ns[0]) / 1e9 - 2.0) < 0.08


# -- gated phases of a phased run (a sweep's rerun that only a verdict can call for) --------------------------


@pytest.mark.anyio
async def test_a_gated_phase_waits_then_runs_or_ends_with_nothing_sent(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    """The gated load's phases (its warmup's and its own) say `ready` and issue nothing before the decision;
    skipped, a phase stops issuing and completes its sending with nothing sent; run, it issues. A phase of
    another name is not held."""
    monkeypatch.delenv("AQBENCH_HANDOVER_DIR", raising=False)
    monkeypatch.delenv("AQBENCH_TIMING_WAIT", raising=False)
    gates: PhaseGates = real_toolkit().aiperf.phase_gates(tmp_path, ["rate8-2", "rate4-2"])
    assert gates.env() == {"AQBENCH_PHASE_GATES": str(tmp_path.resolve())}
    monkeypatch.setenv("AQBENCH_PHASE_GATES", str(tmp_path))
    free = _Issuer(1)
    await _run_for(_strategy(free, name="rate8-1"), 0.2)  # not gated: issues at once
    assert free.tries >= 1 and free.slots == 0
    skipped, warm, ran = _Issuer(3), _Issuer(3), _Issuer(3)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_strategy(skipped, name="rate4-2").execute_phase)  # type: ignore[attr-defined]
        tg.start_soon(_strategy(warm, name="warmup_rate8-2", phase=CreditPhase.WARMUP).execute_phase)  # type: ignore[attr-defined]
        with anyio.fail_after(5):
            while not (gates.reached("rate4-2") and gates.reached("rate8-2")):
                await anyio.sleep(0.005)
            await anyio.sleep(0.05)
            assert skipped.tries == warm.tries == 0 and gates.ran("rate4-2") is None
            gates.decide("rate4-2", run=False)
            gates.decide("rate4-2", run=True)  # the first decision stands
            while not skipped.sending_complete:
                await anyio.sleep(0.005)
            assert skipped.stopped and skipped.tries == 0 and not warm.sending_complete
            gates.decide("rate8-2", run=True)
            while warm.slots:
                await anyio.sleep(0.005)
            tg.start_soon(_strategy(ran, name="rate8-2").execute_phase)  # type: ignore[attr-defined]
            while ran.slots:
                await anyio.sleep(0.005)
            tg.cancel_scope.cancel()
    assert (gates.ran("rate4-2"), gates.ran("rate8-2")) == (False, True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("go.", "skip."))) == [
        "go.rate8-2", "go.warmup_rate8-2", "skip.rate4-2", "skip.warmup_rate4-2"]


@pytest.mark.anyio
async def test_closing_the_gates_skips_every_undecided_load_and_wakes_its_waiter(tmp_path: Path) -> None:
    (tmp_path / "skip.old").write_text("")  # an earlier use's file is cleared
    gates = FileGates(tmp_path, ["a", "b"])
    assert not (tmp_path / "skip.old").exists() and (tmp_path / "gate.warmup_a").exists()
    gates.decide("a", run=True)
    got: list[bool] = []

    async def waiter() -> None:
        got.append(await gates.decided("b"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.sleep(0.02)
        assert not got
        gates.close()
    assert got == [False] and await gates.decided("a") is True and (tmp_path / "skip.b").exists()
