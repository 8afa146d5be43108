"""Audio-QA Tasks a family declares and binds without a manifest for its checkpoints (how TRTMC main carries
Gemma 4 through Edge-LLM), and the Task names the checkout uses, each against the Task list. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from orchestrator.inventory.families import FamilyFacts
from orchestrator.inventory.records import DeclaredTask, Evidence, FamilyNote, SourceDocument, TaskSeen
from orchestrator.inventory.task_names import speaks_of_audio, task_class

__all__ = ["Declared", "declarations", "tasks_seen"]

_SDK_TASK = re.compile(r"""\bkTask\s*=\s*"([a-z0-9_]+)\"""")


class Declared(msgspec.Struct, kw_only=True):
    family: str
    declared: list[DeclaredTask] = []
    bound: list[Evidence] = []
    named: dict[str, Evidence] = {}  # Hugging Face id (as written) -> the README line naming it


def _where(tasks: list[DeclaredTask]) -> str:
    return f"{tasks[0].file} line {', '.join(str(t.line) for t in tasks)}"


def declarations(families: dict[str, FamilyFacts]) -> tuple[dict[str, Declared], list[FamilyNote]]:
    """Families that declare, bind and name checkpoints for an audio-QA Task; notes for the half-done ones.

    A declaration needs both sides: support.py declares the Task and the runtime binds it (test fixtures bind
    everything and are never read); its README's audio table rows name the checkpoints. A family with only one side,
    or naming no checkpoint, is a family note, never dropped.
    """
    found: dict[str, Declared] = {}
    notes: list[FamilyNote] = []
    for family, facts in sorted(families.items()):
        declared, bound = facts.declared("audio-qa"), facts.bound("audio-qa")
        named = facts.readme.named
        if declared and bound and named:
            found[family] = Declared(family=family, declared=declared, bound=bound, named=dict(named))
            continue
        cites = [Evidence(claim="task_declared", file=t.file, field=f"line {t.line}", value=t.task) for t in declared]
        names = ", ".join(dict.fromkeys(f"`{t.task}`" for t in declared))
        if declared and bound:
            notes.append(FamilyNote(family=family, accounted=False, evidence=cites + bound[:2], text=(
                f"declares {names} ({_where(declared)}) and its runtime binds it, but no README audio row names a "
                f"checkpoint and no manifest builds one: which checkpoints carry it cannot be told")))
        elif declared:
            notes.append(FamilyNote(family=family, evidence=cites, text=(
                f"declares {names} ({_where(declared)}) but no runtime file binds it: nothing runs the Task")))
        elif bound:
            notes.append(FamilyNote(family=family, evidence=bound[:3], text=(
                f"its runtime binds `{bound[0].value}` ({bound[0].file} {bound[0].field}) but support.py does not "
                f"declare it: no build carries the Task")))
    return found, notes


def tasks_seen(task_names: Iterable[Evidence], sdk: Iterable[SourceDocument]) -> list[TaskSeen]:
    """Every audio Task name the checkout uses (manifests, support.py, runtime bindings, the owners' Tasks, the
    Task SDK's `kTask`), with its class, or flagged when the name speaks of audio but is not in the list."""
    found: dict[str, list[Evidence]] = {}
    for ev in task_names:
        found.setdefault(str(ev.value), []).append(ev)
    for doc in sdk:
        for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
            for m in _SDK_TASK.finditer(line):
                found.setdefault(m.group(1), []).append(Evidence(claim="task_sdk", file=doc.path, field=f"line {n}",
                                                                 value=m.group(1)))
    out = []
    for name, evidence in sorted(found.items()):
        cls = task_class(name)
        if cls is None and not speaks_of_audio(name):
            continue
        out.append(TaskSeen(task=name, capability_class=cls or "unknown", flagged=cls is None, evidence=evidence[:3]))
    return out
