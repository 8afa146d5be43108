"""AIPerf 0.13.0 as aqbench's load client: install check, offline tokenizer, command, run, records.
AIPerf itself loads the live tap (observer.py), the worker (worker.py) and the timing strategy (timing.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.aiperf.command import AiperfCommand, build_command
    from adapters.aiperf.gates import FileGates
    from adapters.aiperf.handover import FileHandover
    from adapters.aiperf.install import REQUIRED_VERSION, AiperfInstall, check_install
    from adapters.aiperf.phases import phased_command
    from adapters.aiperf.records import RecordParseError, parse_export_line, parse_tap_line
    from adapters.aiperf.run import AiperfOutcome, classify_artifacts, run_aiperf
    from adapters.aiperf.tokenizer import ensure_tokenizer

# observer.py, worker.py and timing.py are AIPerf plugins, loaded by AIPerf itself: they are not imported here, so
# that importing this package never imports AIPerf.
__all__ = [
    "REQUIRED_VERSION",
    "AiperfInstall",
    "check_install",
    "ensure_tokenizer",
    "AiperfCommand",
    "build_command",
    "FileGates",
    "FileHandover",
    "phased_command",
    "AiperfOutcome",
    "run_aiperf",
    "classify_artifacts",
    "parse_export_line",
    "parse_tap_line",
    "RecordParseError",
]


# The names load on first use (PEP 562): `aqbench ingest` reads AIPerf's export through adapters.aiperf.records
# alone, without the process owner's psutil, anyio and zstandard (bench/ingest.py measures its start).
def __getattr__(name: str) -> object:
    if name in __all__:
        from adapters.aiperf import command, gates, handover, install, phases, records, run, tokenizer

        for module in (command, gates, handover, install, phases, records, run, tokenizer):
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
