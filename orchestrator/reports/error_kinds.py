"""What the failed requests were answered, by HTTP status and kind of body: one row per (status, body with its
numbers and ids masked), with its cause, count and one example body. A pure fold of RequestCorrelated events,
bounded by kinds, not requests; the soak report and the live page show it."""

from __future__ import annotations

import json
import re

import msgspec

from orchestrator.events import RequestCorrelated

__all__ = ["ErrorKind", "ErrorKinds", "body_kind", "ERROR_KIND_HEAD", "error_kind_rows"]

# Kinds kept apart; the rest are counted together (a server whose every body differs in words, not numbers).
MAX_KINDS = 24
EXAMPLE_CHARS = 300
_OTHER = "(other bodies, not kept apart)"
_MASK = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|\b[0-9a-fA-F]{16,}\b|\d+(?:\.\d+)?")


class ErrorKind(msgspec.Struct, frozen=True, kw_only=True):
    """Failed requests that got one kind of answer: `http_status` (None: no HTTP answer), `cause` (the join's),
    `kind` (the body's words, numbers and ids masked), `count`, and the first body seen, as `example`."""

    http_status: int | None
    cause: str
    kind: str
    count: int
    example: str = ""


def body_kind(message: str) -> str:
    """The words that tell one kind of error body from another: a JSON body's error message, code or type (where
    it has them), else the text, with numbers, uuids and long hex ids masked as `#`, at most 120 characters."""
    text = message.strip()
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            parts = [str(err[k]) for k in ("code", "type", "message", "detail") if err.get(k) not in (None, "")]
            text = " ".join(parts) if parts else text
        elif isinstance(err, str):
            text = err
    return _MASK.sub("#", " ".join(text.split()))[:120]


class ErrorKinds:
    """The fold: `add` each RequestCorrelated (profiling and warmup alike), `rows()` the kinds, most first."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[int | None, str, str], list[int | str]] = {}

    def add(self, ev: RequestCorrelated) -> None:
        if ev.ok or not (ev.error_message or ev.http_status is not None):
            return
        kind = body_kind(ev.error_message) if ev.error_message else ""
        key = (ev.http_status, ev.cause, kind)
        if key not in self._kinds and len(self._kinds) >= MAX_KINDS:
            key = (ev.http_status, ev.cause, _OTHER)
        slot = self._kinds.setdefault(key, [0, ev.error_message[:EXAMPLE_CHARS]])
        slot[0] = int(slot[0]) + 1

    def rows(self) -> list[ErrorKind]:
        return sorted((ErrorKind(http_status=s, cause=c, kind=k, count=int(n), example=str(ex))
                       for (s, c, k), (n, ex) in self._kinds.items()),
                      key=lambda e: (-e.count, e.http_status or 0, e.kind))


ERROR_KIND_HEAD = ["HTTP status", "cause", "requests", "kind of body", "example body"]


def error_kind_rows(kinds: list[ErrorKind]) -> list[list[str]]:
    """The table's rows: status (or "none": no HTTP answer), cause, count, kind and example."""
    return [[str(k.http_status) if k.http_status is not None else "none", k.cause, str(k.count), k.kind or "-",
             k.example or "-"] for k in kinds]
