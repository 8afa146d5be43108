"""The live tap: an AIPerf `record_observer` plugin writing one JSON line per record to a folder.
Loaded by AIPerf in each record processor (plugins.yaml); off unless AQBENCH_TAP_DIR names a folder.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from aiperf.common.enums import MetricFlags
from aiperf.common.exceptions import MetricUnitError, PostProcessorDisabled
from aiperf.common.mixins import AIPerfLifecycleMixin
from aiperf.metrics.metric_registry import MetricRegistry

if TYPE_CHECKING:  # AIPerf's own types, named for the reader (AIPerf is not type-checked here)
    from aiperf.config.resolution.plan import BenchmarkRun
    from aiperf.post_processors.record_observer_context import RecordObserverContext

__all__ = ["TAP_ENV", "LiveTapObserver"]

# Entry point group `aiperf.plugins`, manifest plugins.yaml. This module imports AIPerf; nothing else may import it.
TAP_ENV = "AQBENCH_TAP_DIR"
_METRICS = {"request_latency": "request_latency_ms", "time_to_first_token": "ttft_ms",
            "output_sequence_length": "output_tokens"}
_encoder = msgspec.json.Encoder()
_HIDDEN = MetricFlags.EXPERIMENTAL | MetricFlags.INTERNAL | MetricFlags.NO_INDIVIDUAL_RECORDS


def _conversions() -> list[tuple[str, str, Any, Any]]:  # the units are AIPerf's MetricUnit values (untyped here)
    """(tag, tap key, unit, display unit) of each metric the tap carries: what AIPerf's
    `MetricRecordDict.to_display_dict` does for these three, without converting all ~25 metrics of a record
    into pydantic values (~160 us a record, in AIPerf's record processor)."""
    out = []
    for tag, key in _METRICS.items():
        cls = MetricRegistry.get_class(tag)
        if not any(cls.has_flags(flag) for flag in _HIDDEN):
            out.append((tag, key, cls.unit, cls.display_unit or cls.unit))
    return out


class LiveTapObserver(AIPerfLifecycleMixin):  # type: ignore[misc]  # AIPerf is not type-checked here
    """Appends each record as one line to `$AQBENCH_TAP_DIR/tap-<pid>.jsonl`, unbuffered.

    One `os.write` per line on an O_APPEND descriptor, so a reader never sees two records interleaved
    and sees each one within microseconds of `observe` returning.
    """

    # AIPerf's plugin loader passes its own keyword arguments (its classes are untyped here); the tap needs none.
    def __init__(self, service_id: str | None = None, run: BenchmarkRun | None = None, **kwargs: Any) -> None:
        folder = os.environ.get(TAP_ENV, "")
        if not folder or not Path(folder).is_dir():
            raise PostProcessorDisabled(f"aqbench live tap disabled ({TAP_ENV} does not name a folder)")
        super().__init__()
        safe = (service_id or "processor").replace("/", "_").replace(":", "_").replace(" ", "_")
        self.path = Path(folder) / f"tap-{os.getpid()}-{safe}.jsonl"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._conversions = _conversions()

    async def observe(self, ctx: RecordObserverContext) -> None:
        md = ctx.metadata
        request = ctx.record.request
        trace = request.trace_data
        err = request.error
        parts = [r.data.get_text() for r in ctx.record.content_responses if r.data]
        line: dict[str, object] = {  # the shape records.py's _TapLine view reads
            "request_id": md.x_request_id or "",
            "correlation_id": md.x_correlation_id or "",
            "conversation_id": md.conversation_id or "",
            "phase": str(md.benchmark_phase),
            "phase_name": getattr(md, "phase_name", None) or "",  # a phased run's window (records.py)
            "session_num": md.session_num,
            "worker_id": md.worker_id,
            "credit_issued_ns": md.credit_issued_ns,
            "request_start_ns": md.request_start_ns,
            "request_ack_ns": md.request_ack_ns,
            "request_end_ns": md.request_end_ns,
            "status": getattr(trace, "response_status_code", None) or request.status,
            "error": None if err is None else {"code": err.code, "type": err.type,
                                               "message": err.message, "cause": err.cause},
            "was_cancelled": bool(md.was_cancelled),
            "text": "".join(p for p in parts if p) if parts else None,
            "headers": getattr(trace, "response_headers", None),
            "observed_ns": time.time_ns(),
        }
        if ctx.metrics is not None:
            metrics = ctx.metrics.metrics
            for tag, key, unit, shown in self._conversions:
                value = metrics.get(tag)
                if value is not None and shown != unit:
                    with contextlib.suppress(MetricUnitError):  # as AIPerf's display: the value unconverted
                        value = unit.convert_to(shown, value)
                if value is not None:
                    line[key] = value
        os.write(self._fd, _encoder.encode(line) + b"\n")
