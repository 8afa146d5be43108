"""Shared test fixtures: asyncio-only anyio backend, and a check that no test leaves a process behind."""

from __future__ import annotations

import os

import psutil
import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    """Every test must end with no child process of ours still alive (zombies included)."""
    yield
    me = psutil.Process(os.getpid())
    left = []
    for child in me.children(recursive=True):
        try:
            child.wait(timeout=5)
        except psutil.TimeoutExpired:
            left.append(f"{child.pid} {' '.join(child.cmdline())[:200]}")
            child.kill()
        except psutil.NoSuchProcess:
            pass
    assert not left, f"test left processes running: {left}"
