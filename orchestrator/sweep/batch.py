"""A batch of sweep points in one AIPerf process: its input rows, its phase names, and its session ids read back.

Pure.
"""

from __future__ import annotations

import msgspec

from orchestrator.dataset import ArmRequest, parse_session_key

__all__ = ["batch_rows", "parse_batch_key", "phase_name"]

# A batch's input repeats the sweep's rows once per planned load, each copy's session ids marked `~<load index>`:
# AIPerf groups rows by session id, and its sequential sampler runs on across phases (wrapping to the first copy
# past the last), so each load starts a copy of its own, and a gated load that runs starts the first again.
_REPEAT_SEP = "~"


def batch_rows(rows: list[ArmRequest], loads: int, per_load: int) -> list[ArmRequest]:
    """The rows of a batch of `loads` loads of `per_load` requests each (warmup included): each load asks the
    items a one-load run asks (the first `per_load` rows, wrapping as AIPerf's sampler does), so every point
    asks the items the concurrency-1 baseline asked, as when each point was its own AIPerf process."""
    wraps = -(-per_load // len(rows))  # a row asked twice in one load is another session too
    return [msgspec.structs.replace(rows[i % len(rows)],
                                    key=f"{rows[i % len(rows)].key}{_REPEAT_SEP}{k * wraps + i // len(rows)}")
            for k in range(loads) for i in range(per_load)]


def parse_batch_key(key: str) -> tuple[str, str]:
    """A batch row's session id back into (item id, arm): its `~<load index>` mark dropped."""
    base, sep, index = key.rpartition(_REPEAT_SEP)
    return parse_session_key(base if sep and index.isdigit() else key)


def phase_name(window: str) -> str:
    """A window's AIPerf phase name (letters, digits, _ and -): `rate1.5-1` -> `rate1_5-1`."""
    return window.split("/", 1)[1].replace(".", "_")
