"""`aqbench soak`: a supervised server under uninterrupted AIPerf load cut into windows (loop), per-window
statistics (window), the answer tracker (tracker), the observer's own samples (observer) and the
verdicts (verdicts)."""

from orchestrator.soak.loop import SoakOptions, SoakTracker, check_processes, exit_code, soak

__all__ = ["SoakOptions", "soak", "exit_code", "SoakTracker", "check_processes"]
