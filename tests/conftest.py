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


# Processes a module- or session-scoped fixture owns (a real server several tests read from): they outlive
# single tests, so they and their descendants are exempt from the leftover check; that fixture ends them.
_SHARED_PIDS: set[int] = set()


@pytest.fixture(scope="session")
def shared_processes() -> set[int]:
    """Add the pid of a process a wider-scoped fixture starts (and stops itself before it returns)."""
    return _SHARED_PIDS


def _is_shared(proc: psutil.Process) -> bool:
    try:
        return proc.pid in _SHARED_PIDS or any(p.pid in _SHARED_PIDS for p in proc.parents())
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    """Every test must end with no child process of ours still alive (zombies included), apart from those
    a shared fixture owns."""
    yield
    me = psutil.Process(os.getpid())
    left = []
    # The session's browser outlives each test on purpose; anything below its driver is the browser's.
    session = browser_pids()
    for child in me.children(recursive=True):
        if _is_shared(child):
            continue
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


# pyproject.toml's `timeout` (120 s) is every test's limit; a test marked slow gets this one unless it names
# its own with @pytest.mark.timeout. A test not marked slow may not raise its limit above the default.
SLOW_TIMEOUT_S = 600
DEFAULT_TIMEOUT_S = 120


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    over = []
    for item in items:
        limit = item.get_closest_marker("timeout")
        if item.get_closest_marker("slow") is None:
            if limit is not None and limit.args and limit.args[0] > DEFAULT_TIMEOUT_S:
                over.append(f"{item.nodeid} (timeout {limit.args[0]} s)")
        elif limit is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    if over:
        raise pytest.UsageError(f"tests not marked slow may not exceed the {DEFAULT_TIMEOUT_S} s per-test timeout; "
                                f"mark them slow or make them faster: {over}")
