"""Everything the audit read of one family, in either layout: its support.py, build and runtime code,
READMEs and own qualification files, gathered by family folder. Pure; reads only the documents given.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from orchestrator.inventory.code_facts import FamilyCode, read_code
from orchestrator.inventory.paths import family_file
from orchestrator.inventory.readme import ReadmeFacts, read_readme
from orchestrator.inventory.records import DeclaredTask, Evidence, SourceDocument
from orchestrator.inventory.support_file import SupportFacts, read_support
from orchestrator.inventory.task_names import task_class

__all__ = ["FamilyFacts", "family_facts"]

# Required checkpoint files that mean a reference voice clip is encoded (a speech tokenizer, a speaker model).
_VOICE_FILE_WORDS = ("speech_tokenizer", "speaker")


class FamilyFacts(msgspec.Struct, kw_only=True):
    """One family as read: `support` is None when the family has no support.py (older layout)."""

    family: str
    support: SupportFacts | None = None
    code: FamilyCode = msgspec.field(default_factory=FamilyCode)
    readme: ReadmeFacts = msgspec.field(default_factory=ReadmeFacts)
    readme_files: list[str] = []
    qualification: list[SourceDocument] = []

    def declared(self, cls: str) -> list[DeclaredTask]:
        """support.py Tasks of one capability class."""
        return [t for t in (self.support.tasks if self.support else []) if task_class(t.task) == cls]

    def bound(self, cls: str) -> list[Evidence]:
        """Runtime bindings (`bind<...>`) of Tasks of one capability class."""
        return [e for e in self.code.bound if task_class(str(e.value)) == cls]

    def default_precision(self) -> Evidence | None:
        return self.support.default_precision if self.support else None

    def voice_evidence(self) -> list[Evidence]:
        """What shows a reference voice clip goes in: a runtime Task taking one, or its encoders required."""
        code = [e for e in [*self.code.bound, *self.code.implemented] if task_class(str(e.value)) == "voice-cloning"]
        files = [e for e in (self.support.required_files if self.support else [])
                 if any(w in str(e.value).lower() for w in _VOICE_FILE_WORDS)]
        return code + files


def family_facts(family_sources: Iterable[SourceDocument], old_code: Iterable[SourceDocument] = ()) -> dict[str, FamilyFacts]:
    """Family folder -> its facts, from `families/` files (tree.read_task_sources) and the older layout's
    build plugins and runtimes (CodeSources.family_code)."""
    code_docs: dict[str, list[SourceDocument]] = {}
    out: dict[str, FamilyFacts] = {}
    for doc in sorted(family_sources, key=lambda d: d.path):
        found = family_file(doc.path)
        if found is None:
            continue
        kind, family = found
        facts = out.setdefault(family, FamilyFacts(family=family))
        if kind == "support":
            facts.support = read_support(doc)
        elif kind == "readme":
            _merge_readme(facts, read_readme(doc))
            facts.readme_files.append(doc.path)
        elif kind == "qualification":
            facts.qualification.append(doc)
        else:
            code_docs.setdefault(family, []).append(doc)
    for doc in old_code:
        code_docs.setdefault(doc.family_dir, []).append(doc)
    for family, docs in code_docs.items():
        out.setdefault(family, FamilyFacts(family=family)).code = read_code(docs)
    return out


def _merge_readme(facts: FamilyFacts, more: ReadmeFacts) -> None:
    r = facts.readme
    for hf_id, ev in more.named.items():
        r.named.setdefault(hf_id, ev)
    r.quality += more.quality
    r.audio_sentences += more.audio_sentences
    if r.limits is None:
        r.limits = more.limits
