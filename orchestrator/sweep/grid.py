"""`aqbench sweep --server-grid KEY=V,V`: the server's own configuration as a dimension, one sweep per value of a
[server] setting (each its own run), and bench.toml with that value set."""

from __future__ import annotations

import msgspec

from orchestrator.base.errors import UsageError
from orchestrator.config import Config, ServerConfig, config_from_dict, config_to_dict

__all__ = ["parse_grid", "with_server_value"]

_FIXED = {"kind", "argv", "env"}  # not a value to sweep over: the server itself, or a mapping


def parse_grid(spec: str) -> tuple[str, list[str]]:
    """`replicas=1,2` as ("replicas", ["1", "2"]); a key must name a [server] setting."""
    key, sep, values = spec.partition("=")
    keys = sorted(set(ServerConfig.__struct_fields__) - _FIXED)
    if not sep or key.strip() not in keys:
        raise UsageError(f"--server-grid {spec!r}: expected KEY=V,V,... with KEY one of the [server] settings: "
                         f"{', '.join(keys)} (e.g. --server-grid replicas=1,2)")
    vals = [v.strip() for v in values.split(",") if v.strip()]
    if len(vals) < 2 or len(set(vals)) != len(vals):
        raise UsageError(f"--server-grid {spec!r}: give at least two distinct values, e.g. replicas=1,2")
    return key.strip(), vals


def with_server_value(cfg: Config, key: str, value: str) -> Config:
    """bench.toml with [server] `key` set to `value` (typed as the setting is), checked as bench.toml is."""
    data = config_to_dict(cfg)
    current = data["server"].get(key)
    typed: object = value
    if isinstance(current, bool):
        typed = value.lower() in ("1", "true", "yes")
    elif isinstance(current, int) or key in ("replicas", "port"):
        try:
            typed = int(value)
        except ValueError as exc:
            raise UsageError(f"--server-grid {key}={value}: {key} takes a whole number") from exc
    elif isinstance(current, float):
        typed = float(value)
    data["server"][key] = typed
    for drop in ("source", "sha256"):
        data.pop(drop, None)
    resolved = config_from_dict(data, where=f"--server-grid {key}={value} over " + (cfg.source or "bench.toml"))
    return msgspec.structs.replace(resolved, source=cfg.source, sha256=cfg.sha256)
