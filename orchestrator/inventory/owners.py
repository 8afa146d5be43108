"""The owners' qualification gates in a checkout: the Tasks tasks.yaml gates, the profiles with a models/ file, and
the checkpoints a family qualifies itself. Pure: YAML by the safe loader; an unreadable file is named in `errors`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import msgspec
import yaml

from orchestrator.inventory.paths import OWNER_MODELS_DIR, OWNER_TASKS, QUALIFICATION_README
from orchestrator.inventory.records import Evidence, OwnerGate, SourceDocument

__all__ = ["OwnerConfigs", "FamilyQualification", "read_owner_configs", "gate_for", "model_config_evidence"]

_TASK_KEY = re.compile(r"^  ([A-Za-z_][\w-]*)\s*:")
_AUDIO_OR_SCORE = re.compile(r"audio|thinker|speech|absolute|supplementary", re.IGNORECASE)


# Where the gates live: `apps/aiperf_qual/config/tasks.yaml` (Tasks), `config/models/<profile>.yaml` (profiles), and
# `families/<family>/tests/{benchmark,qualification}/*.yaml` (the `apps/benchmark/qualification` scheme). A Task entry
# in tasks.yaml gates every catalog model of that Task (profile files hold only exceptions); a family's own
# qualification file gates the checkpoint it names.
class FamilyQualification(msgspec.Struct, frozen=True, kw_only=True):
    """A family's own qualification file: the model it names, its checkpoint and Task, where."""

    file: str
    family: str
    model: str = ""
    checkpoint: str = ""
    task: str = ""
    evidence: Evidence


class OwnerConfigs(msgspec.Struct, frozen=True, kw_only=True):
    """The owners' gates as read; `tasks_file_present` false when the checkout has no tasks.yaml."""

    tasks_file_present: bool = False
    tasks: dict[str, Evidence] = {}
    models: dict[str, SourceDocument] = {}
    family_files: list[FamilyQualification] = []
    scheme_present: bool = False
    errors: list[str] = []


def _load(doc: SourceDocument) -> tuple[object, str]:
    try:
        return yaml.safe_load(doc.data.decode("utf-8", "replace")), ""
    except yaml.YAMLError as exc:
        return None, f"{doc.path}: not valid YAML ({str(exc).splitlines()[0]})"


def _line_of(doc: SourceDocument, needle: str) -> int:
    for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
        if needle and needle in line:
            return n
    return 1


def _tasks(doc: SourceDocument) -> tuple[dict[str, Evidence], list[str]]:
    data, error = _load(doc)
    if error:
        return {}, [error]
    keys = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        return {}, [f"{doc.path}: no `tasks:` mapping; which Tasks the owners gate cannot be read"]
    lines: dict[str, int] = {}
    inside = False
    for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
        if line.startswith("tasks:"):
            inside = True
        elif line[:1] not in ("", " ", "#"):
            inside = False
        elif inside and (m := _TASK_KEY.match(line)):
            lines.setdefault(m.group(1), n)
    return {str(k): Evidence(claim="owner_task", file=doc.path, field=f"line {lines[str(k)]}" if str(k) in lines
                             else f"tasks.{k}", value=str(k)) for k in keys}, []


def _family_file(doc: SourceDocument) -> tuple[FamilyQualification | None, str]:
    data, error = _load(doc)
    if error:
        return None, error
    if not isinstance(data, dict):
        return None, f"{doc.path}: top level is {type(data).__name__}, expected a mapping"
    raw = data.get("candidate")
    candidate: dict[str, object] = raw if isinstance(raw, dict) else {}
    checkpoint, model = str(candidate.get("checkpoint") or ""), str(data.get("model") or "")
    line = _line_of(doc, checkpoint or model)
    return FamilyQualification(
        file=doc.path, family=doc.family_dir, model=model, checkpoint=checkpoint, task=str(candidate.get("task") or ""),
        evidence=Evidence(claim="family_qualification", file=doc.path, field=f"line {line}",
                          value=f"{model or '?'}: {checkpoint or 'no checkpoint named'}")), ""


def read_owner_configs(owner_tasks: SourceDocument | None, owner_models: Iterable[SourceDocument],
                       family_files: Iterable[SourceDocument], scheme: SourceDocument | None) -> OwnerConfigs:
    """Every gate the checkout's owners keep, with the errors of the files that could not be read."""
    tasks, errors = _tasks(owner_tasks) if owner_tasks is not None else ({}, [])
    models = {doc.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]: doc for doc in owner_models}
    found: list[FamilyQualification] = []
    for doc in sorted(family_files, key=lambda d: d.path):
        entry, error = _family_file(doc)
        if entry is not None:
            found.append(entry)
        if error:
            errors.append(error)
    return OwnerConfigs(tasks_file_present=owner_tasks is not None, tasks=tasks, models=models, family_files=found,
                        scheme_present=scheme is not None, errors=errors)


def model_config_evidence(configs: OwnerConfigs, profiles: Sequence[str]) -> list[Evidence]:
    """The lines of a profile's owners' config that say how it is judged or mention audio."""
    out: list[Evidence] = []
    for profile in profiles:
        doc = configs.models.get(profile)
        if doc is None:
            continue
        for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
            if _AUDIO_OR_SCORE.search(line) and not line.lstrip().startswith("# SPDX"):
                out.append(Evidence(claim="owner_model_config", file=doc.path, field=f"line {n}", value=line.strip()))
    return out


def gate_for(configs: OwnerConfigs, *, tasks: Sequence[str], checkpoint: str, profiles: Sequence[str],
             family: str) -> OwnerGate:
    """Whether any owners' gate judges `checkpoint` on one of its audio `tasks`, and what is missing."""
    evidence: list[Evidence] = []
    missing: list[str] = []
    entries = [configs.tasks[t] for t in tasks if t in configs.tasks]
    evidence += entries
    if not configs.tasks_file_present:
        missing.append(f"the checkout has no owners' qualification Tasks ({OWNER_TASKS})")
        evidence.append(Evidence(claim="owner_tasks:absent", file=OWNER_TASKS, field="absent from the checkout",
                                 value="no owners' qualification Tasks"))
    elif not entries:
        gated = ", ".join(sorted(configs.tasks)) or "none"
        missing.append(f"{OWNER_TASKS} gates no {' or '.join(f'`{t}`' for t in tasks)} Task (it gates: {gated})")
        first = min(configs.tasks.values(), key=lambda e: e.field, default=None)
        evidence.append(Evidence(claim="owner_tasks:gated", file=OWNER_TASKS,
                                 field=first.field if first else "tasks", value=f"gates: {gated}"))
    model_files = [configs.models[p] for p in profiles if p in configs.models]
    evidence += [Evidence(claim="owner_model_config", file=d.path, field="line 1", value="profile config") for d in model_files]
    if profiles and not model_files:
        missing.append(f"no {OWNER_MODELS_DIR}/<profile>.yaml for {', '.join(profiles)}")
    own = [f for f in configs.family_files if (checkpoint and f.checkpoint.lower() == checkpoint.lower())
           or (f.model and f.model in profiles)]
    evidence += [f.evidence for f in own]
    if not own:
        where = f"families/{family}/tests/{{benchmark,qualification}}/" if family else "no family"
        scheme = "" if configs.scheme_present else f" (the checkout has no {QUALIFICATION_README})"
        missing.append(f"no {where} file names {checkpoint}{scheme}")
    return OwnerGate(exists=bool(entries or own), task=tasks[0] if tasks else "", evidence=evidence,
                     missing=[] if entries or own else missing)
