"""`aqbench soak`: a supervised server under uninterrupted AIPerf load cut into windows (loop), its settings
(settings), per-window statistics (window), the answer tracker (tracker), the observer's own samples
(observer), the verdicts (verdicts) and how it ends (summary)."""

from orchestrator.soak.leftovers import check_processes
from orchestrator.soak.loop import soak
from orchestrator.soak.settings import SoakOptions
from orchestrator.soak.summary import exit_code
from orchestrator.soak.tracker import SoakTracker

__all__ = ["SoakOptions", "soak", "exit_code", "SoakTracker", "check_processes"]
