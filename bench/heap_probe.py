"""Where a process's resident memory sits, for bench/soak_memory.py --whole --heap-probe.

One line per probe: RSS, glibc's `mallinfo2` (bytes in use, free bytes kept, the main arena's size and the
mmapped chunks), CPython's small-object allocator (arenas held, bytes in used and in free blocks, from
`sys._debugmallocstats`), live threads and tracked objects. Growth in glibc's free bytes or in pymalloc's
free blocks is fragmentation; growth in bytes in use is live memory.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import tempfile
import threading

import psutil

from orchestrator.soak.heap import mallinfo

__all__ = ["HeapProbe"]

_MIB = 2**20


def _pymalloc() -> dict[str, int]:
    """sys._debugmallocstats writes to C stderr: catch fd 2 in a file for the call."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    out = {}
    for key, pattern in (("arenas", r"# arenas allocated current\s*=\s*([\d,]+)"),
                         ("used", r"# bytes in allocated blocks\s*=\s*([\d,]+)"),
                         ("free", r"# bytes in available blocks\s*=\s*([\d,]+)")):
        m = re.search(pattern, text)
        out[key] = int(m.group(1).replace(",", "")) if m else -1
    return out


def smaps_rss() -> dict[str, int]:
    """Resident kB per mapping of this process, keyed 'start-end perms path' (Linux only)."""
    out: dict[str, int] = {}
    key = ""
    try:
        with open("/proc/self/smaps") as fh:
            for line in fh:
                head = line.split(None, 5)
                if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    key = f"{head[0]} {head[1]} {head[5].strip() if len(head) > 5 else '[anon]'}"
                elif head[0] == "Rss:":
                    out[key] = int(head[1])
    except OSError:
        pass
    return out


def _kind(key: str) -> str:
    span, _, path = key.split(" ", 2)
    start, end = (int(x, 16) for x in span.split("-"))
    size = (end - start) >> 10
    if path != "[anon]":
        return path if path.startswith("[") else "file"
    return "anon 1 MiB (pymalloc arenas)" if size == 1024 else "anon other"


class HeapProbe:
    def __init__(self) -> None:
        self._proc = psutil.Process()
        self.lines: list[str] = []
        self.first_maps: dict[str, int] | None = None

    def maps_diff(self, top: int = 12) -> str:
        """Resident kB grown per kind of mapping, and the mappings grown most, since `mark()`."""
        now = smaps_rss()
        base = self.first_maps or {}
        kinds: dict[str, int] = {}
        for key in set(now) | set(base):
            kinds[_kind(key)] = kinds.get(_kind(key), 0) + now.get(key, 0) - base.get(key, 0)
        grown = sorted(((now.get(k, 0) - base.get(k, 0), k) for k in set(now) | set(base)), reverse=True)[:top]
        lines = ["resident kB grown since the mark, by kind: " +
                 ", ".join(f"{k} {v:+d}" for k, v in sorted(kinds.items(), key=lambda kv: -abs(kv[1])) if v)]
        lines += [f"    {d:+7d} kB  {k}" for d, k in grown if d]
        return "\n".join(lines)

    def mark(self) -> None:
        self.first_maps = smaps_rss()

    def header(self) -> str:
        return ("| t | RSS | glibc in use | glibc free | glibc main arena | glibc mmapped | pymalloc arenas | "
                "pymalloc used | pymalloc free | threads | gc objects |\n|---|---|---|---|---|---|---|---|---|---|---|")

    def probe(self, label: str) -> str:
        rss = self._proc.memory_info().rss / _MIB
        mi = mallinfo()
        pm = _pymalloc()
        glibc = (f"{mi.uordblks / _MIB:.2f} | {mi.fordblks / _MIB:.2f} | {mi.arena / _MIB:.2f} | {mi.hblkhd / _MIB:.2f}"
                 if mi else "n/a | n/a | n/a | n/a")
        line = (f"| {label} | {rss:.2f} | {glibc} | {pm['arenas']} | {pm['used'] / _MIB:.2f} | {pm['free'] / _MIB:.2f} | "
                f"{threading.active_count()} | {len(gc.get_objects())} |")
        self.lines.append(line)
        return line
