"""The run key of one model's result row, from what this qualify used (orchestrator/runkey/digests.py says what
it covers). Blocks briefly in a worker thread (installed package versions)."""

from __future__ import annotations

import anyio

from orchestrator.events import RunKey
from orchestrator.qualify.context import ModelRun
from orchestrator.run.provenance import tool_versions
from orchestrator.runkey.digests import run_key

__all__ = ["result_key"]


async def result_key(m: ModelRun) -> RunKey:
    """The key of `m`'s row: its configuration, dataset, bundle (when hashed), server command and versions."""
    versions = await anyio.to_thread.run_sync(tool_versions)
    return run_key(m.cfg, m.model, dataset_identity=m.dataset.identity, bundle_sha256=m.bundle_sha256,
                   aqbench_version=versions.get("aqbench", ""), aqbench_commit=versions.get("aqbench_commit", ""),
                   aiperf_version=versions.get("aiperf", ""))
