"""AIPerf's worker with Python's cycle collector left on in soaks: AIPerf's memory bounded.
Loaded by AIPerf itself in its worker process (service `worker` in plugins.yaml); imports AIPerf, nothing imports it.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from typing import Any

from aiperf.workers.worker import Worker as _AiperfWorker

__all__ = ["WORKER_GC_ENV", "WORKER_GC_STOCK_ENV", "Worker", "collects_cycles", "settle_gc"]

# Why: AIPerf 0.13.0 turns the cycle collector off in its worker (service metadata `disable_gc`;
# aiperf/common/bootstrap.py runs gc.collect() three times, then gc.freeze(), gc.set_threshold(0) and gc.disable()).
# Every request builds an aiohttp `TraceConfig` whose 16 `Signal`s point back at it, with closures over the request's
# `AioHttpTraceData` (aiperf/transports/aiohttp_client.py): a reference cycle that only the collector frees. So the
# worker kept about 14 KiB per request, for the whole run (bench/RESULTS.md). No CLI flag or AIPerf_* variable of
# 0.13.0 turns the collector back on; a plugin entry that replaces the built-in `worker` one (a package beats a
# built-in at equal priority) is the lever 0.13.0 offers.
WORKER_GC_ENV = "AQBENCH_WORKER_GC"
WORKER_GC_STOCK_ENV = "AQBENCH_WORKER_GC_STOCK"


def collects_cycles(environ: Mapping[str, str]) -> bool:
    """Whether the worker runs the cycle collector: aqbench asked for it, and no stock run was asked for."""
    return environ.get(WORKER_GC_ENV) == "1" and environ.get(WORKER_GC_STOCK_ENV) != "1"


def settle_gc(collect_cycles: bool) -> None:
    """The worker's collector: on with the start-up heap frozen, or AIPerf 0.13.0's off."""
    gc.collect()
    gc.collect()
    gc.collect()
    gc.freeze()
    if collect_cycles:
        gc.set_threshold(700, 10, 10)  # Python's defaults
        gc.enable()
    else:
        gc.set_threshold(0)
        gc.disable()


class Worker(_AiperfWorker):  # type: ignore[misc]  # AIPerf is not type-checked here
    """AIPerf's worker, its collector set by `AQBENCH_WORKER_GC` before it builds anything.

    Its plugins.yaml entry says `disable_gc: false`, and this class decides at start-up:
    - `AQBENCH_WORKER_GC=1` (aqbench's soaks, adapters/aiperf/command.py): the start-up heap is frozen out of later
      collections (gc.freeze(), as AIPerf does) and the collector runs at Python's default thresholds, so the
      per-request cycles are freed;
    - unset or anything else: AIPerf's own setting, exactly as its bootstrap applies it, so installing aqbench never
      changes a plain AIPerf run. `AQBENCH_WORKER_GC_STOCK=1` keeps AIPerf's own setting even in a soak: the "without"
      side of bench/aiperf_processes.py --stock-gc.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # AIPerf's own arguments (untyped here), passed through
        settle_gc(collects_cycles(os.environ))
        super().__init__(*args, **kwargs)
