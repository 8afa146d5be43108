"""The final scan of what `aqbench publish` wrote: every absolute path, host name, user name, other
private name, non-loopback IP or credential still present, by file and line. Reads files; writes none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import msgspec

from orchestrator.publish.private import FS_TOPS, PrivateFacts, ipv4_private, word_re
from orchestrator.redaction import REDACTED, is_secret_name

__all__ = ["Finding", "scan_files", "scan_text"]

_ABS_PATH = re.compile(r"(?<![\w.~<>/:@-])/(?P<top>[A-Za-z0-9._@+-]+)(?:/[A-Za-z0-9._@+-]*)*")
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w.]*\d)")
_ASSIGN = re.compile(r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)["']?\s*[=:]\s*["']?(?P<val>[^\s"',;&}]+)""")
_AUTH = re.compile(r"""(?i)authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token)\s+)?(?P<val>[^\s"',}]+)""")


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


def scan_text(text: str, facts: PrivateFacts, *, file: str = "<text>") -> list[Finding]:
    """Every private detail of `text` (one Finding per kind and line)."""
    tops = _fs_tops(facts)
    checks = [("host name", word_re(facts.hosts)), ("user name", word_re(facts.users)),
              ("private name", word_re(facts.names))]
    secrets = [v for v in facts.secret_values if v and v != REDACTED]
    found: list[Finding] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        kinds: dict[str, str] = {}
        for m in _ABS_PATH.finditer(line):
            if m["top"] in tops:
                kinds.setdefault("absolute path", m[0][:80])
        for kind, pattern in checks:
            if pattern is not None and (m2 := pattern.search(line)):
                kinds.setdefault(kind, m2[0])
        for m in _IPV4.finditer(line):
            if ipv4_private(m):
                kinds.setdefault("IP address", m[0])
        if any(v in line for v in secrets):
            kinds.setdefault("secret value", "")
        for m in _ASSIGN.finditer(line):
            if (is_secret_name(m["name"]) and m["val"] != REDACTED and not m["val"].startswith("<")
                    and not m["name"].lower().endswith("authorization")):
                kinds.setdefault("secret value", f"{m['name']}=...")
        if (m3 := _AUTH.search(line)) and m3["val"] != REDACTED:
            kinds.setdefault("secret value", "Authorization header")
        found += [Finding(file=file, line=lineno, kind=k, excerpt=e) for k, e in kinds.items()]
    return found


def scan_files(paths: Iterable[Path], facts: PrivateFacts, *, relative_to: Path | None = None) -> list[Finding]:
    """Scan every file of `paths` as UTF-8 text (undecodable bytes replaced). Blocks (file reads)."""
    found: list[Finding] = []
    for path in paths:
        name = str(path.relative_to(relative_to)) if relative_to else str(path)
        found += scan_text(path.read_text(encoding="utf-8", errors="replace"), facts, file=name)
    return found
