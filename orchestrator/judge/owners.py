"""The owners' non-inferiority gate for one checkpoint, from TRTMC's apps/aiperf_qual files as read.
Pure: the files arrive parsed (ports.OwnerFiles).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from orchestrator.events import GateCitation
from orchestrator.judge.paired import ChosenGate
from orchestrator.spine.ports import OwnerFiles

__all__ = ["deep_merge", "owners_gate"]

_MARGIN_KEYS = {"margin", "relative_margin", "min_native"}


# The owners' YAML, open: each key is read and checked where a gate is resolved.
def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`update` over `base`: mappings merge key by key, anything else (lists too) replaces."""
    merged = copy.deepcopy(dict(base))
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def owners_gate(files: OwnerFiles, *, task: str, benchmark: str, quantized: bool,
                sampled: bool) -> ChosenGate | str:
    """The gate the owners' files give `benchmark` for a checkpoint of `task`, cited by file, revision and
    key; or a sentence saying why none applies (no Task entry, no such benchmark, not a margin gate).

    Semantics mirror the owners' resolution: the Task's entry in config/tasks.yaml over its `defaults`, the profile's
    config/models/<profile>.yaml deep-merged last; `absolute` names the Task's benchmarks (a name, or a mapping with
    `name` and overrides); a sampling candidate takes `sampled_gate` (else `gate`), a quantized one `quantized_gate`
    where given. Nothing is invented: a Task without this workload's benchmark yields the reason, not a gate.
    """
    tasks_doc = files.tasks
    entries = tasks_doc.get("tasks") or {}
    if task not in entries:
        return (f"{files.tasks_file} has no Task entry {task!r} (its Tasks: {', '.join(sorted(entries)) or 'none'}); "
                f"no gate applied")
    config = deep_merge(deep_merge(tasks_doc.get("defaults") or {}, entries[task] or {}), files.profile or {})
    if config.get("accuracy_source") == "none":
        return f"the owners declare accuracy_source none for this checkpoint ({config.get('accuracy_note', '')}); no gate applied"
    names = list(config.get("absolute") or [])
    absolute_file, absolute_key = ((files.profile_file, "absolute") if files.profile and "absolute" in files.profile
                                   else (files.tasks_file, f"tasks.{task}.absolute"))
    listed = [str(e.get("name")) if isinstance(e, Mapping) else str(e) for e in names]
    if benchmark not in listed:
        return (f"Task {task} lists no benchmark for this workload ({benchmark!r}) in {absolute_file} "
                f"{absolute_key} (its benchmarks: {', '.join(listed) or 'none'}); no gate applied")
    index = listed.index(benchmark)
    entry = names[index]
    overrides = {k: v for k, v in entry.items() if k != "name"} if isinstance(entry, Mapping) else {}
    definitions = tasks_doc.get("benchmarks") or {}
    if benchmark not in definitions:
        return f"{files.tasks_file} benchmarks has no definition of {benchmark!r}; no gate applied"
    item = {**definitions[benchmark], **overrides}

    def cite(key: str) -> GateCitation:
        if key in overrides:
            return GateCitation(file=absolute_file, revision=files.revision, entry=f"{absolute_key}[{index}].{key}")
        return GateCitation(file=files.tasks_file, revision=files.revision, entry=f"benchmarks.{benchmark}.{key}")

    key = "gate"
    if sampled and item.get("sampled_gate"):
        key = "sampled_gate"
    elif not sampled and quantized and item.get("quantized_gate"):
        key = "quantized_gate"
    gate = item.get(key)
    if not isinstance(gate, Mapping) or not gate:
        return f"{cite(key).entry} in {cite(key).file} is not set; no gate applied"
    if set(gate) - _MARGIN_KEYS or not (gate.get("margin") or gate.get("relative_margin")):
        return (f"{cite(key).entry} ({', '.join(sorted(gate))}) is not a non-inferiority margin; this workload's "
                f"answers are judged right or wrong, so no gate applied")
    min_native = gate.get("min_native", item.get("min_native"))
    citations = [cite(key), GateCitation(file=absolute_file, revision=files.revision, entry=f"{absolute_key}[{index}]")]
    if min_native is not None:
        citations.append(cite("min_native") if "min_native" not in gate else cite(key))
    seeds = len(item.get("seeds_when_sampled") or [1, 2, 3]) if sampled else 1
    source = f"{cite(key).file}@{files.revision or 'working tree'} {cite(key).entry}"
    return ChosenGate(margin=float(gate.get("margin") or 0.0), relative_margin=float(gate.get("relative_margin") or 0.0),
                      min_native=None if min_native is None else float(min_native), key=key, source=source,
                      citations=citations, seeds=seeds)
