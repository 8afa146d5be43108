"""`aqbench soak`: a supervised server under consecutive AIPerf windows (loop), per-window statistics
(window), the answer tracker (tracker) and the drift and leak verdicts (verdicts)."""

from orchestrator.soak.loop import SoakOptions, SoakTracker, check_processes, soak

__all__ = ["SoakOptions", "soak", "SoakTracker", "check_processes"]
