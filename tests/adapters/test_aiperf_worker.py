"""aqbench's AIPerf worker entry: AIPerf resolves its `worker` service to it, and its collector setting
frees (soaks) or keeps (AIPerf's own setting) the per-request reference cycles of AIPerf's HTTP client."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from aiperf.plugin import plugins
from aiperf.plugin.enums import PluginType

from adapters.aiperf.worker import Worker, collects_cycles

# Runs in a fresh interpreter (the collector setting is process-wide): settle the collector as the worker
# would, then build the cycle AIPerf's HTTP client leaves per request (an aiohttp TraceConfig whose Signals
# point back at it) 2,000 times, and count how many are still alive.
_CHILD = """
import gc, json, sys
from aiohttp import TraceConfig
from adapters.aiperf.worker import settle_gc
settle_gc(sys.argv[1] == "on")
for _ in range(2000):
    cfg = TraceConfig()
    cfg.on_request_start.append(lambda *a, _cfg=cfg: None)
    cfg.freeze()
del cfg
alive = sum(1 for o in gc.get_objects() if type(o) is TraceConfig)
print(json.dumps({"alive": alive, "enabled": gc.isenabled(), "threshold": gc.get_threshold()[0]}))
"""


def _child(mode: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, timeout=120,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_aiperf_resolves_its_worker_service_to_aqbench_entry_with_the_collector_left_to_it() -> None:
    assert plugins.get_class(PluginType.SERVICE, "worker") is Worker
    meta = plugins.get_service_metadata("worker")
    assert (meta.disable_gc, meta.required, meta.auto_start, meta.replicable) == (False, True, False, True)


@pytest.mark.parametrize(("environ", "on"), [
    ({}, False),
    ({"AQBENCH_WORKER_GC": "1"}, True),
    ({"AQBENCH_WORKER_GC": "0"}, False),
    ({"AQBENCH_WORKER_GC": "1", "AQBENCH_WORKER_GC_STOCK": "1"}, False),
])
def test_only_aqbench_asking_turns_the_collector_on(environ: dict[str, str], on: bool) -> None:
    assert collects_cycles(environ) is on


def test_collector_on_frees_the_per_request_cycles_and_aiperf_setting_keeps_them() -> None:
    on, off = _child("on"), _child("off")
    assert on["enabled"] is True and on["alive"] < 1000
    # AIPerf 0.13.0's own setting: collector off, threshold 0, every cycle kept.
    assert off["enabled"] is False and off["threshold"] == 0 and off["alive"] == 2000
