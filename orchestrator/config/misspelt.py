"""An unknown bench.toml key explained: the known key closest to it, and the line it is on in the file."""

from __future__ import annotations

import difflib
import re

__all__ = ["closest", "key_line"]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
_PART = re.compile(r"[A-Za-z0-9_-]+|\[\d+\]")


def _dotted(text: str) -> list[str]:
    return [p.strip().strip("\"'") for p in text.split(".")]


def key_line(text: str, key: str) -> int | None:
    """The 1-based line of `key` ('models[0].replicas', 'server') in TOML `text`, None if not found
    (a key inside an inline table, say)."""
    tables: dict[str, int] = {}  # array of tables -> its last index
    prefix = ""
    for n, line in enumerate(text.splitlines(), 1):
        if (header := _HEADER.match(line)) is not None:
            parts = _dotted(header.group(2))
            base = ".".join(parts)
            if header.group(1) == "[[":
                tables[base] = tables.get(base, -1) + 1
                prefix = f"{base}[{tables[base]}]"
            else:
                prefix = base
            # Keys under an array of tables that the header names by its plain name: [models.reference]
            for array, index in tables.items():
                if base.startswith(array + "."):
                    prefix = f"{array}[{index}]{base[len(array):]}"
            if prefix == key or (header.group(1) == "[[" and f"{base}[{tables[base]}]" == key):
                return n
            continue
        if (found := _KEY.match(line)) is not None:
            full = ".".join([prefix, *_dotted(found.group(1))]) if prefix else ".".join(_dotted(found.group(1)))
            if full == key or full.startswith(key + "."):
                return n
    return None


def closest(unknown: str, known: list[str]) -> str | None:
    """The known key closest in spelling to `unknown`, None when none is close."""
    close = difflib.get_close_matches(unknown, known, n=1, cutoff=0.6)
    return close[0] if close else None
