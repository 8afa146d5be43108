"""A refused comparison said in one short paragraph, its full list of differences in a file outside both runs'
folders (a refusal leaves the runs as they were)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from orchestrator.compare.schema import Comparison, RunRef

__all__ = ["refusal_paragraph", "write_refusal"]


def _side(word: str, ref: RunRef) -> str:
    return f"{word} {Path(ref.journal).parent} ({ref.command or 'unknown'} run {ref.run_id or '?'})"


def _differences(c: Comparison) -> list[str]:
    """Each difference that forbids the comparison, as 'what: baseline vs candidate'."""
    rows = [f"{r.name}: {r.baseline} vs {r.candidate}" for r in c.provenance if r.blocks]
    return rows or list(c.refusals)


def write_refusal(c: Comparison, out: Path | None) -> Path:
    """The full list of differences: into `out` (a folder the user named), else a new file in the system's temp
    folder, since a refused comparison writes nothing into either run's folder. Blocks (a write)."""
    text = "\n".join([f"not comparable: {_side('baseline', c.baseline)} and {_side('candidate', c.candidate)}", "",
                      *c.refusals, "", "every difference that forbids comparing figures:",
                      *(f"- {d}" for d in _differences(c))]) + "\n"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "refused.txt"
        path.write_text(text, encoding="utf-8")
        return path
    b, k = c.baseline.run_id or "baseline", c.candidate.run_id or "candidate"
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", prefix=f"aqbench-refused-{b}-vs-{k}-", suffix=".txt",
                                     delete=False) as f:
        f.write(text)
    return Path(f.name)


def refusal_paragraph(c: Comparison, listed: Path, *, in_temp: bool) -> str:
    """'not comparable: baseline A (qualify run x) and candidate B (...) differ in 13 ways, first: ...; the full
    list is in FILE': the runs, the first two differences, and where the rest is, once."""
    diffs = _differences(c)
    first = "; ".join(diffs[:2]) + ("; ..." if len(diffs) > 2 else "")
    where = (f"{listed} (a temp file: a refused comparison writes nothing into either run's folder)" if in_temp
             else str(listed))
    ways = "1 way that forbids" if len(diffs) == 1 else f"{len(diffs)} ways that forbid"
    return (f"not comparable: {_side('baseline', c.baseline)} and {_side('candidate', c.candidate)} differ in "
            f"{ways} comparing figures, first: {first}; "
            f"the full list is in {where}")
