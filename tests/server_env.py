"""The environment of the reference servers the suite starts.

The suite starts about a hundred short-lived reference servers. Each one's warm-up pass (every analysis and
decoder, a 20 s clip too) costs 3-5 s of CPU before its port opens, about a fifth of the suite's CPU on two cores,
and buys only a flat memory start, which few tests judge. So tests/conftest.py turns it off for the session
(AQBENCH_REFERENCE_WARM_UP=0, inherited by every server and native worker that aqbench spawns), and the tests that
judge memory, or run the README's command as shipped, start theirs with `warmed_env()`.
"""

from __future__ import annotations

import os

from adapters.reference.heap import WARM_UP_ENV

__all__ = ["WARM_UP_ENV", "turn_warm_up_off", "warmed_env"]


def turn_warm_up_off() -> None:
    """For the session (unless the variable is already set, by a person who wants the warm-up on)."""
    os.environ.setdefault(WARM_UP_ENV, "0")


def warmed_env() -> dict[str, str]:
    """This process's environment with the reference server's warm-up pass on, as it is by default."""
    return {**os.environ, WARM_UP_ENV: "1"}
