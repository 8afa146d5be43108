"""Judge a finished AIPerf run by the files in its artifact folder, not by its exit code.

Pure reads of AIPerf's outputs (ready marker, aggregate JSON, phase manifest); never runs anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
import msgspec

from orchestrator.events import Json

__all__ = ["Classification", "Judgement", "judge_artifacts", "wait_artifacts_final", "READY_MARKER",
           "EXPORT_FILES"]

READY_MARKER = ".aiperf_results_ready.json"
EXPORT_FILES = ("profile_export.jsonl", "profile_export_aiperf.json", "outputs.json",
                "profile_export_raw.jsonl", "phase_manifest.json")
Classification = Literal["complete", "partial", "cancelled", "failed"]
_AGG_KEYS = ("aiperf_version", "was_cancelled", "is_complete", "incomplete_reason", "error_summary")
_LATENCY_KEYS = ("avg", "p50", "p90", "p99", "min", "max", "count")


class Judgement(msgspec.Struct, frozen=True, kw_only=True):
    classification: Classification
    reason: str
    aggregate: Json  # journaled as AiperfExited.aggregate: AIPerf's values as it wrote them
    ready: bool


def _read_json(path: Path) -> object:
    try:
        return msgspec.json.decode(path.read_bytes())
    except (FileNotFoundError, msgspec.DecodeError):
        return None


def _count(agg: Json, key: str) -> int | None:
    value = agg.get(key)
    if isinstance(value, dict):
        value = value.get("avg")
    return int(value) if isinstance(value, (int, float)) else None


def _aggregate(folder: Path) -> Json:
    agg = _read_json(folder / "profile_export_aiperf.json")
    out: Json = {}
    if isinstance(agg, dict):
        out = {k: agg[k] for k in _AGG_KEYS if k in agg}
        out["request_count"] = _count(agg, "request_count")
        out["error_request_count"] = _count(agg, "error_request_count")
        lat = agg.get("request_latency")
        if isinstance(lat, dict):
            out["request_latency_ms"] = {k: lat[k] for k in _LATENCY_KEYS if k in lat}
    manifest = _read_json(folder / "phase_manifest.json")
    if isinstance(manifest, dict) and isinstance(manifest.get("phases"), list):
        out["phases"] = {
            p.get("phase_name", str(i)): {
                "total": p.get("total_request_count"), "ok": p.get("successful_request_count"),
                "errors": p.get("error_request_count"), "was_cancelled": p.get("was_cancelled"),
            }
            for i, p in enumerate(manifest["phases"]) if isinstance(p, dict)
        }
    return out


def judge_artifacts(folder: Path, *, returncode: int | None, stopped_early: bool, records: int) -> Judgement:
    """Classify: complete (every request answered), partial (finished with errors or without
    aggregates), cancelled (stopped early: by us, by SIGINT or by AIPerf's failure threshold),
    failed (no records at all). Blocks (small file reads)."""
    raw = _read_json(folder / READY_MARKER)
    marker: dict[str, object] = raw if isinstance(raw, dict) else {}
    ready = bool(marker.get("ready"))
    agg = _aggregate(folder)
    cancelled = stopped_early or bool(agg.get("was_cancelled")) or (ready and bool(marker.get("was_cancelled")))
    errors = agg.get("error_request_count") or 0
    if records == 0 and not agg.get("request_count"):
        why = "no request records and no aggregate"
        return Judgement(classification="failed", aggregate=agg, ready=ready,
                         reason=f"{why} (exit code {returncode}); see logs/aiperf.log in {folder}")
    if cancelled:
        who = "stopped by aqbench" if stopped_early else "AIPerf reports was_cancelled"
        return Judgement(classification="cancelled", reason=who, aggregate=agg, ready=ready)
    if not ready or "request_count" not in agg:
        return Judgement(classification="partial", aggregate=agg, ready=ready,
                         reason=f"no ready marker or aggregate after exit (exit code {returncode}); "
                                f"the records of {records} request(s) were streamed")
    if (ready and marker.get("partial")) or errors:
        return Judgement(classification="partial", aggregate=agg, ready=ready,
                         reason=f"{errors} of {errors + (agg.get('request_count') or 0)} profiling requests failed")
    return Judgement(classification="complete", reason="every profiling request answered",
                     aggregate=agg, ready=ready)


def _sizes(folder: Path) -> tuple[int, ...]:
    out = []
    for name in (READY_MARKER, *EXPORT_FILES):
        try:
            out.append((folder / name).stat().st_size)
        except FileNotFoundError:
            out.append(-1)
    return tuple(out)


async def wait_artifacts_final(folder: Path, *, timeout_s: float, quiet_s: float | None = None,
                               poll_s: float = 0.05) -> bool:
    """Wait until the ready marker exists and the export sizes are unchanged over two polls. With
    `quiet_s`, also give up once nothing changed for that long without a marker (a killed AIPerf never
    writes one). Returns whether the marker was seen. Cancellable; each poll is a few local stats,
    run on the event loop (stability is a matter of time, so this one wait polls)."""
    start = anyio.current_time()
    last: tuple[int, ...] | None = None
    stable = 0
    changed_at = start
    with anyio.move_on_after(timeout_s):
        while True:
            sizes = _sizes(folder)
            if sizes == last:
                stable += 1
            else:
                stable, changed_at = 0, anyio.current_time()
            if sizes[0] >= 0 and stable >= 2:
                return True
            if quiet_s is not None and anyio.current_time() - changed_at >= quiet_s:
                return False
            last = sizes
            await anyio.sleep(poll_s)
    return False
