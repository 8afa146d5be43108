"""What `qualify --plan` says a run would do for one model: server command, stages and request counts.

Pure: reads the configuration and the prepared requests; starts nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from orchestrator.config import Config, ModelConfig
from orchestrator.dataset import ArmRequest, Dataset
from orchestrator.qualify.capability import select_probe_pairs

__all__ = ["describe_plan"]


def describe_plan(cfg: Config, model: ModelConfig, dataset: Dataset, requests: Sequence[ArmRequest],
                  server_argv: Sequence[str], *, skip_aiperf: bool) -> str:
    """One line: the server command, the stages in order, and how many requests each stage sends."""
    pairs = select_probe_pairs(dataset)
    probe_items = {i for p in pairs for i in (p.first, p.second)}
    capability = 2 + 2 * len(probe_items)  # with/without audio, then each probe item on audio and silence
    http = len(requests)
    native = http if model.native_argv else 0
    stages = ["server", f"capability ({capability} requests)",
              f"correctness ({http} HTTP" + (f" + {native} native" if native else "") + " requests)",
              "identity (native vs HTTP)" if native else "identity (skipped: no native runner)"]
    w = cfg.workload
    if skip_aiperf:
        stages.append("aiperf (skipped: --skip-aiperf)")
    else:
        load = f"concurrency {w.concurrency}" if w.concurrency is not None else \
            f"{w.request_rate:g} requests/s ({w.arrival_pattern})"
        stages.append(f"aiperf ({w.warmup_requests} warmup + {w.requests} profiling requests at {load}, "
                      f"arms {', '.join(w.arms)})")
    total = capability + http + native + (0 if skip_aiperf else w.warmup_requests + w.requests)
    return (f"would start `{shlex.join(server_argv)}` and run {'; '.join(stages)}: {total} requests in all "
            f"over dataset {dataset.name} ({len(dataset.items)} items, arms {', '.join(cfg.dataset.arms)})")
