"""Find audio-QA Task declarations in a family's sources: declared in support.py, bound in the runtime,
and the checkpoints its README's audio rows name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from orchestrator.inventory.records import Evidence, SourceDocument

__all__ = ["DECLARED_TASK", "Declared", "declarations"]

# A family declares an audio-QA Task in its support.py (`tasks.append("audio_text_to_text")`) and binds it
# in its runtime (`api::bind<api::IAudioTextToText>(...)`); both are needed, as test fixtures bind
# everything. Its README tables name the checkpoints (Gemma 4 through Edge-LLM has no manifest).
DECLARED_TASK = re.compile(r"""["'](audio_text_to_text|image_audio_text_to_text|audio_video_text_to_text)["']""")
_BOUND_TASK = re.compile(r"\bbind<\s*(?:[\w:]+::)?I(AudioTextToText|ImageAudioTextToText|AudioVideoTextToText)\s*>")
_HF_ID = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w-]*/[A-Za-z0-9][\w.-]*[A-Za-z0-9])(?![\w/-])")


class Declared(msgspec.Struct, kw_only=True):
    family: str
    declared: list[Evidence] = []
    bound: list[Evidence] = []
    named: dict[str, Evidence] = {}  # Hugging Face id (as written) -> the README line naming it


def _line_hits(doc: SourceDocument, pattern: re.Pattern[str], claim: str, *,
               where: Any = None) -> list[Evidence]:
    text = doc.data.decode("utf-8", "replace")
    return [Evidence(claim=claim, file=doc.path, field=f"line {n}", value=line.strip()[:200])
            for n, line in enumerate(text.splitlines(), 1)
            if (where is None or where(line)) and pattern.search(line)]


def declarations(sources: Iterable[SourceDocument]) -> dict[str, Declared]:
    """Families whose sources both declare and bind an audio-QA Task, with the checkpoints their
    READMEs name on table rows that speak of audio."""
    found: dict[str, Declared] = {}
    for doc in sorted(sources, key=lambda d: d.path):
        fam = found.setdefault(doc.family_dir, Declared(family=doc.family_dir))
        name = doc.path.rsplit("/", 1)[-1]
        if name == "support.py":
            fam.declared += _line_hits(doc, DECLARED_TASK, "task_declared")
        elif name == "README.md":
            rows = _line_hits(doc, _HF_ID, "named_in_readme",
                              where=lambda ln: ln.lstrip().startswith("|") and "audio" in ln.lower())
            for ev in rows:
                # The checkpoint column is the first: "text/audio" in a later cell is not an id.
                first_cell = str(ev.value).strip().strip("|").split("|", 1)[0]
                for hf_id in _HF_ID.findall(first_cell):
                    fam.named.setdefault(hf_id, ev)
        else:
            fam.bound += _line_hits(doc, _BOUND_TASK, "task_bound")
    return {k: v for k, v in found.items() if v.declared and v.bound and v.named}
