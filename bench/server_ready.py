"""The readiness wait the benchmarks share: poll a server's `/health/ready` until it answers 200."""

from __future__ import annotations

import time
import urllib.error
import urllib.request


def wait_ready(url: str, timeout_s: float) -> None:
    """Return once `url`/health/ready answers 200; raise RuntimeError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health/ready", timeout=1.0) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)  # the same probe period as aqbench's start-up probe
    raise RuntimeError(f"server at {url} not ready within {timeout_s:g} s")
