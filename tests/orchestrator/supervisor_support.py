"""Shared helpers for the supervisor tests: a spec over the scripted server and an event recorder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from adapters.server_kinds import server_parts
from orchestrator.config import Config, config_from_dict
from orchestrator.spine.bus import Bus, Subscription
from orchestrator.supervision.supervisor import ServerSpec

SERVER = Path(__file__).resolve().parents[1] / "data" / "servers" / "scripted_server.py"
MODEL = "test-model"


def make_config(tmp_path: Path, *server_args: str, **server: Any) -> Config:
    """A Config whose server is the scripted test server with `server_args` (fault flags)."""
    table: dict[str, Any] = {
        "kind": "reference",
        "argv": ["{python}", str(SERVER), "--host", "{host}", "--port", "{port}",
                 "--model-name", "{model}", "--records", "{records}", *server_args],
        "startup_timeout_s": 10.0, "health_period_s": 0.2, "health_timeout_s": 0.5,
        "health_failure_threshold": 2, "stop_grace_s": 3.0, "sample_period_s": 0.2,
        "restart": {"policy": "on-failure", "max_restarts": 2, "window_s": 60.0, "backoff_s": 0.1,
                    "backoff_max_s": 0.5},
    }
    for key, value in server.items():
        if key == "restart":
            table["restart"] = {**table["restart"], **value}
        else:
            table[key] = value
    data = {
        "run": {"output_dir": str(tmp_path)},
        "server": table,
        "models": [{"name": MODEL, "family": "test", "checkpoint": "test/ckpt",
                    "correctness": {"min_pass_rate": 1.0}}],
    }
    return config_from_dict(data, where="test", base=tmp_path)


def make_spec(tmp_path: Path, *server_args: str, **server: Any) -> ServerSpec:
    cfg = make_config(tmp_path, *server_args, **server)
    return ServerSpec.from_config(cfg, cfg.models[0], tmp_path, parts=server_parts(cfg.server.kind))


def drain(sub: Subscription) -> list[Any]:
    """Every event buffered in `sub` so far."""
    out = []
    while True:
        try:
            out.append(sub.receive_nowait())
        except Exception:
            return out


def kinds(events: list[Any], *names: str) -> list[Any]:
    return [e for e in events if type(e).__name__ in names]


def new_bus() -> tuple[Bus, Subscription]:
    bus = Bus("test-run")
    return bus, bus.subscribe("test", size=100_000)


__all__ = ["SERVER", "MODEL", "make_config", "make_spec", "drain", "kinds", "new_bus", "sys"]
