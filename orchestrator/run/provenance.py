"""Where and with what a run ran: tool versions, git commit, host facts. Read-only, cheap, no imports of heavy packages."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
from functools import cache
from pathlib import Path

from orchestrator import __version__
from orchestrator.base.dists import dist_version
from orchestrator.base.errors import ServerError
from orchestrator.events import HostFacts

__all__ = ["tool_versions", "host_facts", "git_commit", "sha256_path"]

_PACKAGES = ("aiperf", "anyio", "aiohttp", "msgspec", "structlog", "soundfile", "psutil", "numpy", "faster-whisper")


@cache
def git_commit() -> str:
    """The commit of the aqbench checkout this code runs from ('' when not a git checkout)."""
    root = Path(__file__).resolve().parents[2]  # orchestrator/run/provenance.py -> the checkout
    if not (root / ".git").exists():
        return ""
    # Both at once: the run's start waits for the slower of the two, not for their sum.
    queries = (["rev-parse", "HEAD"], ["status", "--porcelain", "--untracked-files=no"])
    procs: list[subprocess.Popen[str]] = []
    try:
        for query in queries:
            procs.append(subprocess.Popen(["git", "-C", str(root), *query], stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True))
        commit, dirty = (proc.communicate(timeout=5)[0].strip() for proc in procs)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return f"{commit}-dirty" if commit and dirty else commit


@cache
def tool_versions() -> dict[str, str]:
    versions = {"aqbench": __version__, "aqbench_commit": git_commit(), "python": platform.python_version()}
    for name in _PACKAGES:
        versions[name] = dist_version(name)
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


def sha256_path(path: Path) -> str:
    """sha256 of a bundle file, or of a folder's files (sorted relative paths and contents)."""
    h = hashlib.sha256()
    if not path.exists():
        raise ServerError(f"bundle {path} does not exist; fix bundle in bench.toml")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()
