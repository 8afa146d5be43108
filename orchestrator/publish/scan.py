"""The final scan of what `aqbench publish` wrote, by file and line: the independent detectors (detect.py)
plus the run's own facts (folders outside every named root, configured private names, known secret values).
Reads files; writes none."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import msgspec

from orchestrator.publish.detect import Detectors
from orchestrator.publish.private import FS_TOPS, PrivateFacts, word_re

__all__ = ["Finding", "scan_files", "scan_text"]

_ABS_PATH = re.compile(r"(?<![\w.~<>/:@-])/(?P<top>[A-Za-z0-9._@+-]+)(?:/[A-Za-z0-9._@+-]*)*")
# Kinds whose excerpt helps and gives nothing away (a folder to add to [publish] roots); others never show.
_SHOWN = frozenset({"absolute path"})


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One private detail left in a written file: where, what kind, and a short excerpt (never a secret)."""

    file: str
    line: int
    kind: str
    excerpt: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}" + (f": {self.excerpt}" if self.excerpt else "")


def _fs_tops(facts: PrivateFacts) -> frozenset[str]:
    tops = set(FS_TOPS)
    for paths in facts.roots.values():
        tops.update(p.strip("/").split("/", 1)[0] for p in paths if p.strip("/"))
    try:
        tops.update(e.name for e in os.scandir("/") if e.is_dir(follow_symlinks=False))
    except OSError:
        pass
    return frozenset(t for t in tops if t)


# detect.py finds credentials by shape and entropy, emails, this machine's names, addresses and users, home,
# scratch and temporary paths.
def scan_text(text: str, facts: PrivateFacts, detectors: Detectors | None = None, *,
              file: str = "<text>") -> list[Finding]:
    """Every private detail of `text`, one Finding per kind and line (leftmost first)."""
    tops = _fs_tops(facts)
    names = word_re(facts.names)
    found: list[Finding] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        kinds: dict[str, str] = {}
        if detectors is not None:
            for d in detectors.line(line, lineno):
                kinds.setdefault(d.kind, "")
        for m in _ABS_PATH.finditer(line):
            if m["top"] in tops:
                # The folder is shown (to add to [publish] roots) unless it holds a private detail itself.
                shown = m[0][:80]
                if (detectors is not None and detectors.line(shown, lineno)) or (names and names.search(shown)):
                    shown = ""
                kinds.setdefault("absolute path", shown)
        if names is not None and names.search(line):
            kinds.setdefault("private name", "")
        found += [Finding(file=file, line=lineno, kind=k, excerpt=e if k in _SHOWN else "") for k, e in kinds.items()]
    return found


def scan_files(paths: Iterable[Path], facts: PrivateFacts, detectors: Detectors | None = None, *,
               relative_to: Path | None = None) -> list[Finding]:
    """Scan every file of `paths` as UTF-8 text (undecodable bytes replaced). Blocks (file reads)."""
    found: list[Finding] = []
    for path in paths:
        name = path.relative_to(relative_to).as_posix() if relative_to else str(path)
        found += scan_text(path.read_text(encoding="utf-8", errors="replace"), facts, detectors, file=name)
    return found
