"""Narrows a server's resource sampler to the GPUs its task was given (Ray's CUDA_VISIBLE_DEVICES).
NVML numbers every device of the host; a campaign task must report only its own, or two models on one
host would each claim the other's memory and utilisation."""

from __future__ import annotations

import dataclasses

import msgspec

from orchestrator.spine.ports import ResourceSampler, ServerParts, TreeSample

__all__ = ["visible_gpus", "only_visible_gpus"]


def visible_gpus(value: str) -> set[int] | None:
    """Device indexes in a CUDA_VISIBLE_DEVICES value; None when unset or not plain indexes (e.g. UUIDs)."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not value.strip() or not all(p.isdigit() for p in parts):
        return None
    return {int(p) for p in parts}


class _VisibleSampler:
    def __init__(self, inner: ResourceSampler, visible: set[int]) -> None:
        self._inner = inner
        self._visible = visible

    @property
    def gpu_unavailable(self) -> str:
        return self._inner.gpu_unavailable

    def sample(self, root_pid: int) -> TreeSample | None:
        sample = self._inner.sample(root_pid)
        if sample is None:
            return None
        return msgspec.structs.replace(sample, gpus=[g for g in sample.gpus if g.index in self._visible],
                                       gpu_identities=[g for g in sample.gpu_identities if g.index in self._visible])

    def close(self) -> None:
        self._inner.close()


def only_visible_gpus(parts: ServerParts, visible: set[int]) -> ServerParts:
    """The same parts, whose samplers report only the devices in `visible` (NVML indexes)."""
    inner = parts.new_sampler
    return dataclasses.replace(parts, new_sampler=lambda: _VisibleSampler(inner(), visible))
