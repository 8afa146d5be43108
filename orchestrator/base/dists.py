"""Installed distributions' versions and metadata files, read from their dist-info folders on sys.path.

Without importlib.metadata: its import alone (email, zipfile, csv) cost 0.05 CPU-s of every run's start.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

__all__ = ["dist_folder", "dist_version"]

_SEPARATORS = re.compile(r"[-_.]+")


def _normal(name: str) -> str:
    # PEP 503's normal form with underscores, as a wheel names its dist-info folder.
    return _SEPARATORS.sub("_", name).lower()


@cache
def _folders(entries: tuple[str, ...]) -> dict[str, Path]:
    """The first `<name>-<version>.dist-info` (or `.egg-info`) folder of each distribution along `entries`,
    by normal name: the one that imports, as importlib.metadata would find it."""
    found: dict[str, Path] = {}
    for entry in entries:
        try:
            with os.scandir(entry or ".") as it:
                names = [e.name for e in it if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:  # a zip file, a path hook's name, a folder gone
            continue
        for name in sorted(names):
            found.setdefault(_normal(name.rsplit(".", 1)[0].split("-", 1)[0]), Path(entry or ".") / name)
    return found


def dist_folder(name: str, path: Sequence[str] | None = None) -> Path | None:
    """The dist-info (or egg-info) folder of the distribution `name` installed on `path` (None: sys.path), or
    None when none is found."""
    return _folders(tuple(sys.path if path is None else path)).get(_normal(name))


def dist_version(name: str, path: Sequence[str] | None = None) -> str:
    """The version of distribution `name` installed on `path` (None: sys.path), or '' when it is not."""
    folder = dist_folder(name, path)
    if folder is None:
        return ""
    # METADATA's Version header, as importlib.metadata reads it (the folder's name may escape it).
    for meta in ("METADATA", "PKG-INFO"):
        try:
            with (folder / meta).open(encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():  # the headers end at the first blank line
                        break
        except OSError:
            continue
    stem = folder.name.rsplit(".", 1)[0]
    return stem.split("-", 1)[1] if "-" in stem else ""
