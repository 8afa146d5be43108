"""A real Config for fixture journals: the repository's bench.toml with sections or model fields replaced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from orchestrator.config import Config, config_to_dict, load_config

_BENCH = Path(__file__).resolve().parents[2] / "bench.toml"


def make_config(*, models: list[dict[str, Any]] | None = None, **sections: dict[str, Any]) -> Config:
    """bench.toml's configuration; each model dict is merged onto bench.toml's first model (nested
    sections one level deep), and each named section is merged onto bench.toml's section."""
    base = config_to_dict(load_config(_BENCH))
    if models is not None:
        template = base["models"][0]
        merged = []
        for model in models:
            m = dict(template)
            for key, value in model.items():
                m[key] = {**template[key], **value} if isinstance(value, dict) and isinstance(template.get(key), dict) else value
            merged.append(m)
        base["models"] = merged
    for name, values in sections.items():
        base[name] = {**base[name], **values}
    return msgspec.convert(base, Config)
