"""`aqbench sweep`: the capacity under [slo], one AIPerf run per load point, with the answers checked."""

from orchestrator.sweep.run import SweepOptions, sweep

__all__ = ["SweepOptions", "sweep"]
