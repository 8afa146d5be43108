"""AIPerf 0.13.0 as aqbench's load client: install check, offline tokenizer, command, run, records.
AIPerf itself loads the live tap (observer.py), the worker (worker.py) and the timing strategy (timing.py).
"""

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
