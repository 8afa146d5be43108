"""The base of every journaled event and the journal's format version."""

from __future__ import annotations

import msgspec

__all__ = ["SCHEMA_VERSION", "Event", "snake_tag"]

# 2: typed payloads (RunStarted.config/host, Phase*.detail, ModelResult.row, GateEvaluated.detail,
#    Warned/Failed.detail, SoakWindowClosed.summary).
# 3: tagged unions of detail Structs (Phase*.detail by phase, SoakVerdict.detail by rule,
#    CapabilityProbed.evidence by check), ServerRecord.audio typed. Journals of versions 1 and 2 are
#    upgraded as they are read (orchestrator/spine/journal_upgrade.py).
SCHEMA_VERSION = 3


def snake_tag(name: str) -> str:
    """A class name as its journal tag: `RunStarted` -> `run_started` (every journal's tag rule)."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag=snake_tag):
    """Base of every event. The bus stamps `run_id`, `seq`, `ts_ns` and `mono_ns` on publish.

    `ts_ns` is wall-clock `time.time_ns()` (comparable with AIPerf and server records on one host);
    `mono_ns` is `time.monotonic_ns()` of this process (for durations within one run).
    `source` names the producer (`supervisor`, `aiperf`, `correlator`, `ingest:<file>`, ...).
    """

    run_id: str = ""
    seq: int = 0
    ts_ns: int = 0
    mono_ns: int = 0
    source: str = ""
