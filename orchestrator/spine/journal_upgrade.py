"""Journals of older schema versions brought to the current one as they are read, line by line (decoded as
plain JSON, reshaped 1 -> 2 -> 3, converted to the current typed event). Imports events only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, TypeGuard

import msgspec

from orchestrator.events import SCHEMA_VERSION, AnyEvent

__all__ = ["OLDEST_VERSION", "upgrader", "with_open_intervals"]

OLDEST_VERSION = 1

Obj: TypeAlias = dict[str, Any]  # one journal line as plain JSON, while it is reshaped
_ANY_EVENT: Any = AnyEvent  # the runtime tagged union (the type checker sees the Event base)
_generic = msgspec.json.Decoder()

# Phase details by phase name (schema 2 had one Struct of optional fields for every phase); run-aiperf's
# `aiperf` phase has a detail of its own.
_PHASE_TAGS = {"dataset": "dataset", "model": "model", "server": "server", "capability": "capability",
               "correctness": "correctness", "identity": "identity", "aiperf": "aiperf", "reference": "reference",
               "noninferiority": "noninferiority", "soak": "soak"}
_AIPERF_SETTINGS = ("warmup_requests", "requests", "concurrency", "request_rate", "streaming", "arms",
                    "request_timeout_s")
_RUN_AIPERF_KEYS = ("rows", "window", "classification", "balanced")
# Soak verdict details by metric; the numbers a verdict table shows, which schema 2 kept beside the detail.
_VERDICT_TAGS = {"server_rss": "memory", "server_gpu_memory": "memory", "orchestrator_rss": "memory",
                 "latency_drift": "drift", "server_p99_latency": "tail", "error_rate": "error_rate",
                 "correctness": "correctness", "restarts": "restart", "processes": "process",
                 "window_gap": "gap", "accounting": "accounting"}
_NUMBERS_BY_TAG = {"memory": ("slope", "interval", "limit", "unit"), "drift": ("slope", "interval", "limit", "unit"),
                   "tail": ("slope", "interval", "limit", "unit"), "error_rate": ("limit",), "gap": ("limit", "unit")}
_CHECKS = ("transport", "conditioning", "text_only", "transcription_only")


# Only reshaping lives here: what a field means never changes, so an upgraded journal folds into the reports
# its release wrote.
def upgrader(version: int, command: str) -> Callable[[bytes], AnyEvent]:
    """A line decoder that brings a journal of `version` (OLDEST_VERSION to SCHEMA_VERSION - 1), written by
    `command`, to the current schema. Raises ValueError for a version it cannot upgrade."""
    if not OLDEST_VERSION <= version < SCHEMA_VERSION:
        raise ValueError(f"no upgrade from journal schema version {version}")
    steps: list[Callable[[Obj], Obj]] = []
    if version <= 1:
        steps.append(_v1_to_v2)
    if version <= 2:
        steps.append(lambda obj: _v2_to_v3(obj, command))

    def decode(line: bytes) -> AnyEvent:
        obj = _generic.decode(line)
        if isinstance(obj, dict):
            for step in steps:
                obj = step(obj)
        event: AnyEvent = msgspec.convert(obj, _ANY_EVENT)
        return event

    return decode


# ------------------------------------------------------------------------------------------------ 1 -> 2


def _v1_to_v2(obj: Obj) -> Obj:
    """Schema 1 kept a mismatch's answers beside its ids; schema 2 keeps them in `answers`."""
    if obj.get("kind") in ("phase_started", "phase_finished"):
        detail = obj.get("detail")
        if isinstance(detail, dict):
            for key in ("mismatches", "identity_mismatches"):
                if isinstance(detail.get(key), list):
                    detail[key] = [_v1_mismatch(e) for e in detail[key]]
    return obj


def _v1_mismatch(entry: object) -> Obj:
    """v1 kept a mismatch's answers beside its ids: {item_id, arm, request_id?, <path>: answer, ...}."""
    if not isinstance(entry, dict):
        return {"item_id": str(entry)}
    ids = ("item_id", "arm", "request_id")
    return {**{k: entry[k] for k in ids if k in entry},
            "answers": {k: v for k, v in entry.items() if k not in ids}}


# ------------------------------------------------------------------------------------------------ 2 -> 3


def _v2_to_v3(obj: Obj, command: str) -> Obj:
    """Schema 2 kept phase details, soak verdict details and capability evidence as one Struct of optional
    fields or a dict; schema 3 tags each by its kind. ServerRecord.audio became typed."""
    kind = obj.get("kind")
    if kind in ("phase_started", "phase_finished"):
        obj["detail"] = _phase_detail(str(obj.get("phase", "")), command, obj.get("detail"))
    elif kind == "capability_probed":
        evidence = obj.get("evidence")
        check = obj.get("check")
        obj["evidence"] = {**evidence, "kind": check} if evidence and check in _CHECKS else None
    elif kind == "soak_verdict":
        _soak_verdict(obj)
    elif kind == "server_record" and obj.get("audio") is not None:
        obj["audio"] = _audio(obj["audio"])
    return obj


def _phase_detail(phase: str, command: str, detail: object) -> Obj | None:
    if not isinstance(detail, dict) or not detail or phase not in _PHASE_TAGS:
        return None
    detail = dict(detail)
    tag = _PHASE_TAGS[phase]
    if phase == "server":
        # The server's own /v1/models answer: journaled again by ServerReady.models, the report's source.
        detail.pop("models", None)
    elif phase == "aiperf" and (command == "run-aiperf" or any(k in detail for k in _RUN_AIPERF_KEYS)):
        tag = "aiperf_run"
    elif phase == "aiperf" and "settings" not in detail and any(k in detail for k in _AIPERF_SETTINGS):
        # qualify's AIPerf stage journaled its workload flat when it started.
        detail["settings"] = {k: detail.pop(k) for k in _AIPERF_SETTINGS if k in detail}
    return {**detail, "kind": tag}


def _soak_verdict(obj: Obj) -> None:
    """Tag the detail by metric; its numbers, reason and outcome at the top, as schema 2 published them
    (journals older than that kept them inside `detail`, and `judged` where `outcome` now is)."""
    detail = dict(obj.get("detail") or {})
    if not obj.get("outcome"):
        judged = detail.get("judged", True)
        obj["outcome"] = "fail" if not obj.get("passed") else "pass" if judged else "inconclusive"
    detail.pop("judged", None)
    reason = detail.pop("reason", "")
    obj["reason"] = obj.get("reason") or str(reason)
    closed = detail.pop("windows_closed", 0)
    obj["windows_closed"] = obj.get("windows_closed") or (closed if isinstance(closed, int) else 0)
    for key in ("slope", "interval", "limit", "unit"):
        value = obj.get(key)
        value = value if value is not None and value != "" else detail.pop(key, None)
        detail.pop(key, None)
        obj[key] = _number(key, value)
    tag = _VERDICT_TAGS.get(str(obj.get("metric", "")))
    if tag is None or not detail:
        obj["detail"] = None
        return
    for key in _NUMBERS_BY_TAG.get(tag, ()):
        if obj[key] is not None and obj[key] != "":
            detail[key] = obj[key]
    obj["detail"] = {**detail, "kind": tag}


def _number(key: str, value: object) -> float | list[float] | str | None:
    """A verdict table's number as schema 2 published it: a float, a two-float interval, a unit string."""
    if key == "unit":
        return str(value or "")
    if key == "interval":
        if isinstance(value, list) and len(value) == 2 and all(_is_number(x) for x in value):
            return [float(x) for x in value]
        return None
    return float(value) if _is_number(value) else None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _audio(audio: object) -> Obj | None:
    """A server record's `audio` object, keeping the fields of the expected type (the correlator read only
    well-typed seconds and bytes)."""
    if not isinstance(audio, dict):
        return None
    want: dict[str, tuple[type, ...]] = {"format": (str,), "sample_rate_hz": (int,), "channels": (int,),
                                         "seconds": (int, float), "bytes": (int,)}
    return {k: v for k, v in audio.items()
            if k in want and isinstance(v, want[k]) and not isinstance(v, bool)}


# ------------------------------------------------------------------------------------------------ repairs


def with_open_intervals(line: bytes) -> AnyEvent | None:
    """A current-schema soak verdict whose detail holds an interval with an open end as `[null, null]` (msgspec
    writes -inf and inf as null; earlier releases journaled aiperf_rss's across-generations interval so when
    too few successors gave one), read with that interval as None, what such a verdict journals now. None
    for any other line: its fault is another, for the caller to name."""
    obj = _generic.decode(line)
    if not isinstance(obj, dict) or obj.get("kind") != "soak_verdict" or not isinstance(obj.get("detail"), dict):
        return None
    detail = obj["detail"]
    open_ends = [k for k, v in detail.items() if k.endswith("interval") and isinstance(v, list) and None in v]
    top_open = isinstance(obj.get("interval"), list) and None in obj["interval"]  # the table's copy of it
    if not open_ends and not top_open:
        return None
    obj["detail"] = {**detail, **dict.fromkeys(open_ends)}
    if top_open:
        obj["interval"] = None
    event: AnyEvent = msgspec.convert(obj, _ANY_EVENT)
    return event
