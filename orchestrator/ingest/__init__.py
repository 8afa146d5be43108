"""`aqbench ingest`: structured logs and records read back into the run's events (reader, inputs) or joined over
columns (columns), followed live (follow), summarised (summary, render) and written to Parquet (parquet)."""

from typing import Any

from orchestrator.ingest.inputs import expand_inputs, read_chunks
from orchestrator.ingest.parquet import write_parquet
from orchestrator.ingest.reader import Ingest, gc_paused, new_joiner
from orchestrator.ingest.summary import (
    BadLine,
    BadLineError,
    IngestSummary,
    SourceSummary,
    latency_statistics,
)

__all__ = [
    "BadLine", "BadLineError", "SourceSummary", "IngestSummary", "Ingest", "expand_inputs", "read_chunks",
    "latency_statistics", "new_joiner", "run_follow", "write_parquet", "gc_paused",
]


def __getattr__(name: str) -> Any:  # noqa: ANN401  # PEP 562: the one lazily loaded name
    # run_follow loads on first use: only --follow needs it (and its anyio), not a whole-file ingest's start.
    if name == "run_follow":
        from orchestrator.ingest.follow import run_follow

        return run_follow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
