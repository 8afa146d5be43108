"""Find the installed AIPerf, insist on exactly 0.13.0 and fingerprint its distribution.

Never imports AIPerf itself (that costs seconds and a gigabyte); reads only its dist-info.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import msgspec

from orchestrator.base.dists import dist_folder, dist_version
from orchestrator.base.errors import ClientError

__all__ = ["REQUIRED_VERSION", "AiperfInstall", "check_install"]

REQUIRED_VERSION = "0.13.0"


class AiperfInstall(msgspec.Struct, frozen=True, kw_only=True):
    """What `check_install` found: version, sha256 of the dist's RECORD and the console script."""

    version: str
    fingerprint: str
    executable: str


def _record_sha256(folder: Path) -> str:
    # RECORD lists every installed file with its own hash, so its digest pins the whole install.
    try:
        text = (folder / "RECORD").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClientError(
            "aiperf is installed without a RECORD file in its dist-info; cannot fingerprint it. "
            f"Reinstall with: {sys.executable} -m pip install --force-reinstall aiperf=={REQUIRED_VERSION}"
        ) from None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _executable() -> str:
    # Prefer the console script next to this interpreter: that is the AIPerf we just fingerprinted.
    beside = Path(sys.executable).parent / "aiperf"
    if beside.is_file():
        return str(beside)
    found = shutil.which("aiperf")
    if found:
        return found
    raise ClientError(
        f"the aiperf console script is neither beside {sys.executable} nor on PATH; "
        f"reinstall with: {sys.executable} -m pip install aiperf=={REQUIRED_VERSION}"
    )


def check_install() -> AiperfInstall:
    """Return the installed AIPerf's identity. Blocks briefly (reads dist-info). Raises ClientError."""
    folder = dist_folder("aiperf")
    if folder is None:
        raise ClientError(
            f"AIPerf is not installed in {sys.prefix}; install it with: "
            f"{sys.executable} -m pip install aiperf=={REQUIRED_VERSION}"
        )
    version = dist_version("aiperf")
    if version != REQUIRED_VERSION:
        raise ClientError(
            f"AIPerf {version} is installed in {sys.prefix}, but aqbench needs exactly {REQUIRED_VERSION} "
            "(its record observer API and export formats are pinned); install it with: "
            f"{sys.executable} -m pip install aiperf=={REQUIRED_VERSION}"
        )
    return AiperfInstall(version=version, fingerprint=_record_sha256(folder), executable=_executable())
