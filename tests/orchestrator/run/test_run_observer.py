"""The soak's observer sampler: aqbench's own process and the running AIPerf's tree, as ProcessSampled."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TypeVar

import anyio
import pytest

from orchestrator.events import Event, ProcessSampled
from orchestrator.run.observer import ObserverSampler, tree_rss

pytestmark = pytest.mark.anyio


E = TypeVar("E", bound=Event)


class _Bus:
    """An event sink that keeps what the sampler publishes and says when `want` samples have come (of each
    role in `roles`, when given)."""

    def __init__(self, want: int, roles: tuple[str, ...] = ()) -> None:
        self.events: list[ProcessSampled] = []
        self.want = want
        self.roles = roles
        self.enough = anyio.Event()

    async def publish(self, ev: E) -> E:
        assert isinstance(ev, ProcessSampled)
        self.events.append(ev)
        if len(self.events) >= self.want and set(self.roles) <= {e.role for e in self.events}:
            self.enough.set()
        return ev


def _waiting_child() -> subprocess.Popen[bytes]:
    """A child Python that lives until its stdin closes, returned once its interpreter is up (it said so): sampled
    while it was still starting, it held under 1 MiB (a CI run caught it there, after its exec)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"up\n"
    return child


class TestObserverSampler:
    async def test_samples_itself_and_the_named_aiperf_tree(self) -> None:
        """Samples of aqbench (its own pid) and of the process `aiperf_pid` names, with its children. (A child
        caught between fork and exec gives no sample that turn, so the test waits for one of each role.)"""
        child = _waiting_child()
        try:
            bus = _Bus(want=2, roles=("orchestrator", "aiperf"))
            sampler = ObserverSampler(bus, period_s=0.05, aiperf_pid=lambda: child.pid)
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    await tg.start(sampler.run)
                    await bus.enough.wait()
                    tg.cancel_scope.cancel()
        finally:
            child.stdin.close()  # type: ignore[union-attr]
            child.stdout.close()  # type: ignore[union-attr]
            child.wait()
        own = next(e for e in bus.events if e.role == "orchestrator")
        aiperf = next(e for e in bus.events if e.role == "aiperf")
        assert (own.role, own.pid, own.processes) == ("orchestrator", os.getpid(), 1)
        assert (aiperf.role, aiperf.pid) == ("aiperf", child.pid)
        assert own.rss_bytes > 10 * 2**20 and aiperf.rss_bytes > 1 * 2**20

    async def test_each_own_sample_follows_a_trim(self) -> None:
        """With `trim` (the soak passes malloc_trim), every sample of aqbench itself comes after one trim,
        so the journaled RSS is what aqbench holds; AIPerf's samples trim nothing of aqbench's."""
        trims: list[int] = []
        bus = _Bus(want=3)
        sampler = ObserverSampler(bus, period_s=0.01, aiperf_pid=lambda: None, trim=lambda: trims.append(len(bus.events)))
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                await tg.start(sampler.run)
                await bus.enough.wait()
                tg.cancel_scope.cancel()
        own = [e for e in bus.events if e.role == "orchestrator"]
        assert len(own) >= 3 and sampler.trims >= len(own)
        assert trims[:3] == [0, 1, 2]  # each trim ran before the sample it precedes was published

    def test_a_gone_process_has_no_sample(self) -> None:
        """A pid that no longer exists yields None (no sample), not an error."""
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        child.wait()
        assert tree_rss(child.pid) is None
