"""The run key each configured model would have now: the configuration as it is, the dataset it names, its
bundle's bytes and the installed aqbench and AIPerf. Blocks (dataset verification, bundle hashing, package
metadata); the ledger and a campaign's resume compare result rows against it."""

from __future__ import annotations

from pathlib import Path

from orchestrator.base.errors import ServerError
from orchestrator.config import Config
from orchestrator.dataset import load_dataset, resolve_dataset_path
from orchestrator.dataset.clip_cache import facts_dir
from orchestrator.events import RunKey
from orchestrator.run.provenance import sha256_path, tool_versions
from orchestrator.runkey.digests import run_key

__all__ = ["current_keys"]


def current_keys(cfg: Config, models: list[str] | None = None) -> dict[str, RunKey]:
    """Model name -> its key now, for every configured model (or those named). A bundle that cannot be read
    here keys as unhashed, so a row made with it no longer matches (its key says what changed)."""
    dataset = load_dataset(resolve_dataset_path(cfg.dataset), facts=facts_dir(cfg.run))
    versions = tool_versions()
    out: dict[str, RunKey] = {}
    hashed: dict[str, str] = {}
    for model in cfg.models:
        if models is not None and model.name not in models:
            continue
        bundle = model.bundle or cfg.server.bundle
        if bundle and bundle not in hashed:
            try:
                hashed[bundle] = sha256_path(Path(bundle))
            except (ServerError, OSError):  # an unreadable bundle is a changed input: the key says so
                hashed[bundle] = ""
        out[model.name] = run_key(cfg, model, dataset_identity=dataset.identity, bundle_sha256=hashed.get(bundle, ""),
                                  aqbench_version=versions.get("aqbench", ""),
                                  aqbench_commit=versions.get("aqbench_commit", ""),
                                  aiperf_version=versions.get("aiperf", ""))
    return out
