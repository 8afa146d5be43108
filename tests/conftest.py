"""Shared test fixtures: asyncio-only anyio backend, a check that no test leaves a process behind, and the
session's headless Chromium (`browser`, from tests/browser.py)."""

from __future__ import annotations

import os

import psutil
import pytest
from browser import browser, browser_pids

__all__ = ["anyio_backend", "browser"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    """Every test must end with no child process of ours still alive (zombies included)."""
    yield
    me = psutil.Process(os.getpid())
    left = []
    # The session's browser outlives each test on purpose; anything below its driver is the browser's.
    session = browser_pids()
    for child in me.children(recursive=True):
        try:
            if session and (child.pid in session or any(p.pid in session for p in child.parents())):
                continue
            child.wait(timeout=5)
        except psutil.TimeoutExpired:
            left.append(f"{child.pid} {' '.join(child.cmdline())[:200]}")
            child.kill()
        except psutil.NoSuchProcess:
            pass
    assert not left, f"test left processes running: {left}"
