"""The first batch's hold (orchestrator/sweep/start.py): AIPerf's process starts beside the capability probe, its
planned loads wait at their gates; the sample waits for AIPerf to sit at its first gate, and the release runs the
leading loads that still fit and skips the rest (none where the probe failed)."""

from __future__ import annotations

import anyio
import pytest

from orchestrator.sweep.start import FirstHold

pytestmark = pytest.mark.anyio


class _Gates:
    """The PhaseGates port as FirstHold uses it: AIPerf `arrives` at a gate; decisions are recorded."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.at: set[str] = set()
        self.decisions: dict[str, bool] = {}

    def reached(self, name: str) -> bool:
        return name in self.at

    def decide(self, name: str, *, run: bool) -> None:
        self.decisions.setdefault(name, run)

    def env(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        for name in self.names:
            self.decide(name, run=False)

    async def decided(self, name: str) -> bool:
        return self.decisions[name]

    def ran(self, name: str) -> bool | None:
        return self.decisions.get(name)

    def halt(self, name: str) -> None:
        raise AssertionError(f"FirstHold never halts a load ({name})")

    def halted(self, name: str) -> int | None:
        return None


async def test_at_gate_waits_for_aiperf_and_the_release_runs_the_leading_loads() -> None:
    gates, hold = _Gates(["baseline", "rate1-1", "rate2-1"]), FirstHold()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold.keep, gates, gates.names)
        await anyio.sleep(0.1)
        assert not hold.at_gate.is_set()  # AIPerf still starting: the sample must not run yet
        gates.at.add("baseline")
        with anyio.fail_after(2):
            await hold.at_gate.wait()
        assert gates.decisions == {}  # nothing decided before the plan is stated
        hold.release(2)
    assert gates.decisions == {"baseline": True, "rate1-1": True, "rate2-1": False}
    assert hold.released_at is not None
    with anyio.fail_after(1):
        await hold.decided()  # what reads the held loads' decisions waits for this, not for the release


async def test_a_failed_probe_skips_every_held_load() -> None:
    gates, hold = _Gates(["baseline", "rate1-1"]), FirstHold()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold.keep, gates, gates.names)
        hold.release(0)
        with anyio.move_on_after(0.1) as waited:
            await hold.decided()  # released, but no gate decided yet: AIPerf has not reached its gate
        assert waited.cancelled_caught and gates.decisions == {}
        gates.at.add("baseline")
    assert gates.decisions == {"baseline": False, "rate1-1": False}


async def test_a_process_that_ends_before_its_gate_does_not_hold_the_sample() -> None:
    gates, hold = _Gates(["c1-1", "c2-1"]), FirstHold()
    hold.ended()  # AIPerf exited before reaching its gate: nothing will ever arrive there
    with anyio.fail_after(1):
        await hold.at_gate.wait()
    hold.release(1)
    hold.release(0)  # the first release stands
    gates.at.add("c1-1")
    with anyio.fail_after(1):
        await hold.keep(gates, gates.names)
    assert gates.decisions == {"c1-1": True, "c2-1": False}
