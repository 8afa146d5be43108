"""Read TRTMC's published support matrix (`website/data/model-support-matrix.md`) into OwnerStatus rows."""

from __future__ import annotations

import re

from orchestrator.inventory.records import OwnerStatus, SourceDocument

__all__ = ["read_support_matrix"]

_CODE = re.compile(r"`([^`]+)`")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_FIXED_COLUMNS = 5  # hf_id, profile, precision, quantization, provider


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _plain(cell: str) -> str:
    return " ".join(_BREAK.sub("; ", cell).replace("`", "").split())


# The table's first column holds the Hugging Face id in backticks (a `Revision:` may follow after `<br />`),
# then the profile, build precision, quantization and runtime provider; every later column is a platform
# whose cell is the owners' word (an emoji, then Green, Yellow or Red).
def read_support_matrix(doc: SourceDocument | None) -> dict[str, list[OwnerStatus]]:
    """Lower-cased Hugging Face id -> the matrix rows naming it (one per profile), with file and line."""
    if doc is None:
        return {}
    out: dict[str, list[OwnerStatus]] = {}
    header: list[str] = []
    for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
        if not line.lstrip().startswith("|"):
            header = []
            continue
        cells = _cells(line)
        if not header:
            header = cells
            continue
        if all(set(c) <= set("-: ") for c in cells) or len(cells) < _FIXED_COLUMNS:
            continue  # the separator row, or a row too short to be a model
        ids = _CODE.findall(_BREAK.split(cells[0])[0])
        if not ids:
            continue
        platforms = {
            _plain(header[i]) if i < len(header) else f"column {i + 1}":
                " ".join(w for w in _plain(cells[i]).split() if w.isascii()) or _plain(cells[i])
            for i in range(_FIXED_COLUMNS, len(cells))
        }
        profile = _CODE.findall(cells[1])
        row = OwnerStatus(file=doc.path, line=n, hf_id=ids[0], profile=profile[0] if profile else _plain(cells[1]),
                          precision=_plain(cells[2]), provider="" if _plain(cells[4]) in ("—", "-", "") else
                          _plain(cells[4]), platforms=platforms)
        out.setdefault(ids[0].lower(), []).append(row)
    return out
