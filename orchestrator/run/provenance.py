"""Where and with what a run ran: tool versions, git commit, host facts. Read-only, cheap, no imports of heavy packages."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path

from orchestrator import __version__
from orchestrator.events import HostFacts

__all__ = ["tool_versions", "host_facts", "git_commit"]

_PACKAGES = ("aiperf", "anyio", "aiohttp", "msgspec", "structlog", "soundfile", "psutil", "numpy", "faster-whisper")


@cache
def git_commit() -> str:
    """The commit of the aqbench checkout this code runs from ('' when not a git checkout)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return ""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    commit = out.stdout.strip()
    return f"{commit}-dirty" if commit and dirty.stdout.strip() else commit


@cache
def tool_versions() -> dict[str, str]:
    versions = {"aqbench": __version__, "aqbench_commit": git_commit(), "python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return versions


@cache
def host_facts() -> HostFacts:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return HostFacts(hostname=socket.gethostname(), os=f"{platform.system()} {platform.release()}",
                     machine=platform.machine(), cpu=cpu, cpus=os.cpu_count() or 0,
                     python=platform.python_version())
