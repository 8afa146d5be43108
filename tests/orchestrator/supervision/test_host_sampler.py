"""The host sampler: load average, steal and the CPU of processes outside the run, told apart from the run's own
process tree (real processes, real /proc)."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import psutil
import pytest

from orchestrator.events import HostSampled
from orchestrator.spine.bus import Bus
from orchestrator.supervision.host_sampler import HostReading, HostSampler, sample_between

# Burns one CPU for `s` seconds, then exits by itself (never left behind).
_BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def test_interval_arithmetic() -> None:
    """2 s with 3 CPU-seconds busy, 1 of them the run's and 0.2 stolen of 8 CPU-seconds: 1.5 busy, 0.5 run,
    1.0 outside, 2.5 % steal."""
    s = sample_between(HostReading(busy=10.0, total=100.0, steal=1.0, run=4.0),
                       HostReading(busy=13.0, total=108.0, steal=1.2, run=5.0), 2.0, load1=1.5)
    assert (s.busy_cpus, s.run_cpus, s.outside_cpus, s.steal_share, s.load1) == (1.5, 0.5, 1.0, 0.025, 1.5)


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


@pytest.mark.slow
def test_outside_cpu_is_told_from_the_runs_own() -> None:
    """A CPU burner outside the run's tree (re-parented away) counts as outside CPU, one the run started as the
    run's: each figure holds at least most of what its burner used (the machine may be shared: the burners get
    what they get, and other processes only add to outside)."""

    async def main(burners: tuple[psutil.Process, psutil.Process]) -> tuple[HostSampled, float, float]:
        bus = Bus("host-test")
        async with anyio.create_task_group() as tg, bus.subscribe("test", size=64) as sub:
            await tg.start(HostSampler(bus, interval_s=2.0).run)
            before = [_cpu(p) for p in burners]  # after the sampler's first reading: within its interval
            async for ev in sub:
                if isinstance(ev, HostSampled):
                    after = [_cpu(p) for p in burners]
                    tg.cancel_scope.cancel()
                    return ev, (after[0] - before[0]) / ev.interval_s, (after[1] - before[1]) / ev.interval_s
        raise AssertionError("no HostSampled")

    with subprocess.Popen([sys.executable, "-c", _BURN.format(s=6)]) as inside:
        # sh starts the outside burner in the background, prints its pid and exits: no descendant of ours.
        pid = subprocess.run(["sh", "-c", f"{sys.executable} -c '{_BURN.format(s=6)}' >/dev/null 2>&1 & echo $!"],
                             check=True, capture_output=True, text=True).stdout.strip()
        outside = psutil.Process(int(pid))
        try:
            assert outside.ppid() != os.getpid()
            sample, inside_cpus, outside_cpus = anyio.run(main, (psutil.Process(inside.pid), outside))
        finally:
            inside.kill()
            outside.kill()
    assert inside_cpus > 0.05 and outside_cpus > 0.05, (inside_cpus, outside_cpus)
    assert sample.run_cpus >= 0.7 * inside_cpus and sample.outside_cpus >= 0.7 * outside_cpus, \
        (sample, inside_cpus, outside_cpus)
    assert sample.cpus >= 1 and 0.0 <= sample.steal_share <= 1.0 and sample.load1 >= 0.0
