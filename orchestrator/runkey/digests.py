"""The run key of one model's result: digests of what the result depends on (as TRTMC's own campaign keys its
results), and what changed between two keys. Pure; the caller reads the bundle's sha256, the dataset identity
and the versions. A result row counts only under the key its inputs have now."""

from __future__ import annotations

import hashlib

import msgspec

from orchestrator.config import Config, ModelConfig
from orchestrator.events import RunKey

__all__ = ["KEY_FIELDS", "config_digest", "key_changes", "rekeyed", "run_key", "server_argv_digest"]

# The configuration sections a result does not depend on.
_NOT_RESULT = ("run", "soak", "inventory", "publish", "compare", "campaign", "source", "sha256")
_encoder = msgspec.json.Encoder(order="deterministic")
# (field, how a change of it is named)
KEY_FIELDS = (("config_sha256", "configuration"), ("dataset_identity", "dataset"), ("bundle_sha256", "bundle"),
              ("server_argv_sha256", "server command"), ("aqbench_version", "aqbench version"),
              ("aqbench_commit", "aqbench code"), ("aiperf_version", "AIPerf version"))


def _sha256(data: object) -> str:
    return hashlib.sha256(_encoder.encode(data)).hexdigest()


# The model's resolved configuration: `[server]`, `[dataset]`, `[workload]` and its own `[[models]]` entry,
# canonically encoded (so adding another model, or editing `[run]`, `[soak]`, `[inventory]`, `[publish]`,
# `[compare]` or `[campaign]`, changes no key).
def config_digest(cfg: Config, model: ModelConfig) -> str:
    """sha256 of the model's resolved configuration (the comment above says what it covers)."""
    raw = msgspec.to_builtins(cfg)
    for name in _NOT_RESULT:
        raw.pop(name, None)
    raw["models"] = [msgspec.to_builtins(model)]
    return _sha256(raw)


# Before the port, run folder and records path are filled in: they change every run and say nothing of the
# result.
def server_argv_digest(cfg: Config, model: ModelConfig) -> str:
    """sha256 of the server kind, its argv template with the model's arguments, and its replica count."""
    srv = cfg.server
    return _sha256({"kind": srv.kind, "argv": [*srv.argv, *model.server_args], "replicas": srv.replicas,
                    "model": model.name})


def _keyed(fields: dict[str, str]) -> RunKey:
    ordered = {name: fields[name] for name, _ in KEY_FIELDS}
    return RunKey(**ordered, digest=_sha256(ordered)[:16])


# Beside the two digests: the dataset's content identity, the engine bundle's bytes, and the code that
# measured and judged (aqbench's version and commit, AIPerf's version).
def run_key(cfg: Config, model: ModelConfig, *, dataset_identity: str, bundle_sha256: str, aqbench_version: str,
            aqbench_commit: str, aiperf_version: str) -> RunKey:
    """The key of `model`'s result under these inputs; `digest` is the first 16 hex of their sha256."""
    return _keyed({"config_sha256": config_digest(cfg, model), "dataset_identity": dataset_identity,
                   "bundle_sha256": bundle_sha256, "server_argv_sha256": server_argv_digest(cfg, model),
                   "aqbench_version": aqbench_version, "aqbench_commit": aqbench_commit,
                   "aiperf_version": aiperf_version})


def rekeyed(key: RunKey, **fields: str) -> RunKey:
    """`key` with some inputs replaced and its digest recomputed."""
    return _keyed({**{name: getattr(key, name) for name, _ in KEY_FIELDS}, **fields})


def _short(value: str) -> str:
    return (value[:12] if len(value) > 16 else value) or "none"


def key_changes(old: RunKey | None, new: RunKey) -> list[str]:
    """What differs from `old` to `new`, each as `what old -> new` (digests shortened); a row without a key
    says so. Empty when the digests agree."""
    if old is None:
        return ["the row records no run key (written before aqbench recorded keys)"]
    if old.digest == new.digest:
        return []
    changes = [f"{label} {_short(getattr(old, name))} -> {_short(getattr(new, name))}"
               for name, label in KEY_FIELDS if getattr(old, name) != getattr(new, name)]
    return changes or [f"key {old.digest} -> {new.digest}"]
