"""What `qualify --plan` says a run would do for one model: server command, stages and request counts, and
which gates a stage's plan cannot reach (a kind the AIPerf stage never asks).
Pure: reads the configuration and the prepared requests; starts nothing."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from orchestrator.config import Config, CorrectnessCriteria, ModelConfig, WorkloadConfig
from orchestrator.dataset import ArmRequest, Dataset, interleave_kinds
from orchestrator.qualify.capability import select_probe_pairs

__all__ = ["aiperf_rows", "describe_plan", "unreachable_gates"]


def aiperf_rows(requests: Sequence[ArmRequest], dataset: Dataset, workload: WorkloadConfig) -> list[ArmRequest]:
    """The rows of the AIPerf input file, in file order: the workload's arms, dealt round-robin by kind."""
    return interleave_kinds([r for r in requests if r.arm in workload.arms], dataset)


def unreachable_gates(rows: Sequence[ArmRequest], dataset: Dataset, workload: WorkloadConfig,
                      criteria: CorrectnessCriteria) -> list[str]:
    """Gate scopes no profiling request will answer: AIPerf's sequential sampler sends rows in file order,
    warmup first, wrapping around, so the profiling requests are rows warmup .. warmup + requests - 1."""
    if criteria.min_pass_rate is None or not rows:
        return []
    sent = [rows[(workload.warmup_requests + i) % len(rows)] for i in range(min(workload.requests, len(rows)))]
    arms = {r.arm for r in sent}
    kinds = {dataset.item(r.item_id).kind for r in sent if r.arm == criteria.arm}
    out = [] if criteria.arm in arms else [f"arm:{criteria.arm}"]
    return out + [f"kind:{k}" for k in sorted(criteria.min_pass_rate_by_kind) if k not in kinds]


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
        unreached = unreachable_gates(aiperf_rows(requests, dataset, w), dataset, w, model.correctness)
        stages.append(f"aiperf ({w.warmup_requests} warmup + {w.requests} profiling requests at {load}, "
                      f"arms {', '.join(w.arms)}" + (f"; never asks the gated {', '.join(unreached)}: not applicable "
                                                    "under load" if unreached else "") + ")")
    total = capability + http + native + (0 if skip_aiperf else w.warmup_requests + w.requests)
    return (f"would start `{shlex.join(server_argv)}` and run {'; '.join(stages)}: {total} requests in all "
            f"over dataset {dataset.name} ({len(dataset.items)} items, arms {', '.join(cfg.dataset.arms)})")
