"""`aqbench run-aiperf`: one AIPerf phase against the configured server, with live correlation and accounting."""

from orchestrator.aiperf_phase.phase import RunAiperfOptions, run_aiperf_phase

__all__ = ["RunAiperfOptions", "run_aiperf_phase"]
