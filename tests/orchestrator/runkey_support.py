"""The reference model's run key, with named changes, for the run-key and publish tests."""

from __future__ import annotations

from config_support import make_config

from orchestrator.events import RunKey
from orchestrator.runkey.digests import rekeyed, run_key


def key(**changes: str) -> RunKey:
    cfg = make_config(models=[{"name": "reference-audioqa"}])
    base = run_key(cfg, cfg.models[0], dataset_identity="d" * 64, bundle_sha256="", aqbench_version="0.1.0",
                   aqbench_commit="c" * 40, aiperf_version="0.13.0")
    return rekeyed(base, **changes) if changes else base

