"""Gaps a family's own code shows: an audio engine its build writes that its runtime never loads.

Rule: the build plugin (`families/<fam>/plugin.py`) stores engine sections as `result["<name>_plan"] = ...`;
the C++ runtime (`src/runtime/models/<fam>/*.cpp`) loads sections by their quoted `"<name>_plan"`. A
section whose name speaks of audio that is built but never loaded means no audio input reaches the
model. The runtime's public `generate*(...)` entry points (`pipeline.h`) and an audio plan struct in a
`*_plan.h` header are cited beside it, so a reader can check each step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from orchestrator.inventory.records import Evidence, Gap, SourceDocument

__all__ = ["code_gaps"]

_BUILT = re.compile(r"""\[\s*["'](\w+_plan)["']\s*\]\s*=""")
_LOADED = re.compile(r'"(\w+_plan)"')
_AUDIO_PLAN_STRUCT = re.compile(r"\b(?:struct|class)\s+(\w*Audio\w*Plan)\b")
_ENTRY = re.compile(r"\b(generate\w*)\s*\(([^)]*)(\))?")
_AUDIO_WORDS = ("audio", "speech", "wav", "whisper")
_AUDIO_PARAM = re.compile(r"audio|samples|pcm|wave|mel", re.IGNORECASE)


def _hits(doc: SourceDocument, pattern: re.Pattern[str], claim: str) -> list[tuple[re.Match[str], Evidence]]:
    out = []
    for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
        for m in pattern.finditer(line):
            out.append((m, Evidence(claim=claim, file=doc.path, field=f"line {n}", value=line.strip()[:200])))
    return out


def _lines(evidence: list[Evidence]) -> str:
    return ", ".join(ev.field.removeprefix("line ") for ev in evidence)


def code_gaps(family_code: Iterable[SourceDocument]) -> dict[str, list[Gap]]:
    """Family folder name -> the gaps its build and runtime code show (none when it shows nothing)."""
    by_family: dict[str, list[SourceDocument]] = {}
    for doc in sorted(family_code, key=lambda d: d.path):
        by_family.setdefault(doc.family_dir, []).append(doc)
    out: dict[str, list[Gap]] = {}
    for family, docs in by_family.items():
        builds = [d for d in docs if d.path.endswith(".py")]
        runtime = [d for d in docs if not d.path.endswith(".py")]
        if not builds or not any(d.path.endswith(".cpp") for d in runtime):
            continue  # a gap needs both sides: what is built and what is loaded
        built = [hit for d in builds for hit in _hits(d, _BUILT, "section_built")]
        loaded = [hit for d in runtime if d.path.endswith(".cpp") for hit in _hits(d, _LOADED, "section_loaded")]
        loaded_names = sorted({m.group(1) for m, _ in loaded})
        for name in sorted({m.group(1) for m, _ in built}):
            if name in loaded_names or not any(w in name.lower() for w in _AUDIO_WORDS):
                continue
            built_ev = [ev for m, ev in built if m.group(1) == name]
            load_ev = [ev for _, ev in loaded]
            plan_ev = [ev for d in runtime if d.path.endswith(".h") for _, ev in _hits(d, _AUDIO_PLAN_STRUCT,
                                                                                       "audio_plan_declared")]
            entries = [(m, ev) for d in runtime if d.path.endswith("pipeline.h")
                       for m, ev in _hits(d, _ENTRY, "entry_point")]
            entry_ev = [ev for _, ev in entries]
            text = (f"audio encoder built but never loaded by the runtime; no audio input reaches the model: "
                    f"{built_ev[0].file} writes `{name}` (line {_lines(built_ev)}), but the runtime loads only "
                    f"{', '.join(f'`{n}`' for n in loaded_names) or 'no section'}"
                    f" ({load_ev[0].file if load_ev else 'runtime'} line {_lines(load_ev)})")
            if entries and not any(_AUDIO_PARAM.search(m.group(2) or "") for m, _ in entries):
                names = ", ".join(dict.fromkeys(
                    f"{m.group(1)}({(m.group(2) or '').strip().rstrip(',')}{'' if m.group(3) else ', ...'})"
                    for m, _ in entries))
                text += f"; {entry_ev[0].file} exposes only {names}, none taking audio"
            out.setdefault(family, []).append(Gap(
                text=text, summary="audio encoder built but never loaded by the runtime; no audio input reaches it",
                evidence=built_ev + plan_ev + load_ev + entry_ev))
    return out
