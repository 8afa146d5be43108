"""Keeps a local Ray on 127.0.0.1: every Ray port then listens on loopback only (checked in the tests).
On Linux Ray resolves 127.0.0.1 to the host's routable address unless its cluster mode is off, which Ray
reads once, when it is imported: so this must run before `import ray`."""

from __future__ import annotations

import os
import sys

__all__ = ["LOOPBACK_ENV", "pin_to_loopback"]

# Ray's own switch (named for macOS and Windows, where it is off by default): off = a single-machine Ray
# whose node address is 127.0.0.1. Inherited by Ray's processes started from here.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def pin_to_loopback() -> None:
    """Set LOOPBACK_ENV for this process; raises RuntimeError when Ray was already imported without it."""
    os.environ.update(LOOPBACK_ENV)
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and getattr(constants, "ENABLE_RAY_CLUSTER", False):
        raise RuntimeError("ray was imported before pin_to_loopback(); a local Ray would bind this host's "
                           "routable address. Call pin_to_loopback() before importing adapters.ray.cluster")
