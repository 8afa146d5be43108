"""`aqbench qualify`: one model at a time through the owners' stages (server, capability, correctness,
identity, AIPerf), each stage's facts journaled; the capability probes live apart from the stages."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.qualify.stages import STATUSES, QualifyOptions, qualify

__all__ = ["QualifyOptions", "qualify", "STATUSES"]


# The stages load on first use of a name (PEP 562): the sweep and other commands import this package's probes
# and answer helpers without the stages' judges (scipy.stats and scipy.optimize, ~1 s).
def __getattr__(name: str) -> object:
    if name in __all__:
        from orchestrator.qualify import stages

        return getattr(stages, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
