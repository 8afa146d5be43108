"""`aqbench qualify`: one model at a time through the owners' stages (server, capability, correctness,
identity, AIPerf), each stage's facts journaled; the capability probes live apart from the stages."""

from orchestrator.qualify.stages import STATUSES, QualifyOptions, qualify

__all__ = ["QualifyOptions", "qualify", "STATUSES"]
