"""One run's scope: its folder, bus, journal writer, RunStarted/RunFinished (scope), the host and tool
facts recorded at its start (provenance), and the sampler of aqbench's and AIPerf's own memory (observer)."""

from orchestrator.run.scope import Interrupt, RunScope, new_run_id, open_run, run_main

__all__ = ["RunScope", "Interrupt", "open_run", "run_main", "new_run_id"]
