"""The readiness and model-listing protocol trtmc-server speaks (and the reference server copies).
`GET /health/ready`: 200 `{"status":"ready","degraded":bool}` or 503 `{"status":"not_ready",...}`;
`GET /v1/models`: `{"data":[{"id":...}, ...]}`. Pure parsing; no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from orchestrator.base.errors import ConfigError
from orchestrator.events import Json
from orchestrator.spine.ports import Readiness

__all__ = ["parse_readiness", "listed_models", "render_argv"]

_any = msgspec.json.Decoder(object)  # a foreign answer: its shape is checked where it is read
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _short(body: bytes, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def parse_readiness(status: int, body: bytes) -> Readiness:
    """200 with `status: ready` is ready (`degraded` as given); anything else is not, with what was seen."""
    try:
        doc = _any.decode(body) if body else None
    except msgspec.DecodeError:
        doc = None
    if not isinstance(doc, dict):
        return Readiness(ready=False, detail=f"HTTP {status}, body not a JSON object: {_short(body)!r}")
    state = doc.get("status")
    degraded = bool(doc.get("degraded", False))
    if status == 200 and state == "ready":
        return Readiness(ready=True, degraded=degraded, detail=f"HTTP 200 {_short(body)}")
    return Readiness(ready=False, degraded=degraded, detail=f"HTTP {status} {_short(body)}")


def listed_models(body: bytes) -> list[Json]:
    """The `data` entries of `/v1/models`; ValueError naming what was wrong with the shape."""
    try:
        doc = _any.decode(body)
    except msgspec.DecodeError as exc:
        raise ValueError(f"/v1/models answer is not JSON ({exc}): {_short(body)!r}") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and "id" in m for m in data):
        raise ValueError(f"/v1/models answer has no data[] of objects with an id: {_short(body)!r}")
    return data


def render_argv(template: Sequence[str], values: Mapping[str, str], *, kind: str) -> list[str]:
    """Replace each `{name}`; ConfigError naming the argv index and placeholder when it has no value."""
    out = []
    for i, arg in enumerate(template):

        def fill(match: re.Match[str], i: int = i) -> str:
            name = match.group(1)
            value = values.get(name)
            if value is None or value == "":
                raise ConfigError(
                    f"server.argv[{i}]: placeholder {{{name}}} has no value for server kind {kind!r}"
                    + (" (set server.bundle or models[].bundle)" if name == "bundle" else "")
                )
            return value

        out.append(_PLACEHOLDER.sub(fill, arg))
    return out
