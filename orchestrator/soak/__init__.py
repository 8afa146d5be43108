"""`aqbench soak`: a supervised server under uninterrupted AIPerf load, cut into time windows and judged for
leaks and drift, as a pipeline of steps (docs/development.md draws them)."""

from orchestrator.soak.leftovers import check_processes
from orchestrator.soak.loop import soak
from orchestrator.soak.settings import SoakOptions
from orchestrator.soak.summary import exit_code
from orchestrator.soak.tracker import SoakTracker

__all__ = ["SoakOptions", "soak", "exit_code", "SoakTracker", "check_processes"]
