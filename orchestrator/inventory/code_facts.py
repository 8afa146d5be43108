"""What a family's build and runtime code show, line by line: the bundle sections built and loaded, the Tasks bound
or implemented, and (older layout) `generate*` entry points and audio plan structs. Pure.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

import msgspec

from orchestrator.inventory.records import Evidence, SourceDocument
from orchestrator.inventory.task_names import AUDIO_TASKS, interface_task

__all__ = ["FamilyCode", "read_code"]

AUDIO_QA_TASKS = tuple(t for t, cls in AUDIO_TASKS.items() if cls == "audio-qa")
# Both layouts: builds write `result["<name>_plan"] = ...` (older plugin.py) or `writer.add_bytes("<name>", ...)`
# (`add_json`, `open_section`, ...); runtimes load a quoted `"<name>_plan"` (older) or `require_section(bundle,
# "<name>")` (`find_section`, `read_section`, ...); they bind Tasks with `api::bind<api::IAudioTextToText>(...)` and
# implement them as base classes (`public IReferenceAudioGeneration`). Reads only the documents it is given.
_BUILT = (
    re.compile(r"""\[\s*["'](\w+_plan)["']\s*\]\s*="""),
    re.compile(r"""\.(?:add_bytes|add_json|add_text|add_section|open_section|add_file)\(\s*f?["']([^"'{}]+)["']"""),
)
_LOADED = (
    re.compile(r'"(\w+_plan)"'),
    re.compile(r'\b(?:require_section|require_text_section|require_text|find_section|read_section|copy_section)'
               r'\s*\(\s*(?:[\w.:>()\-]+\s*,\s*)?"([^"]+)"'),
)
_BOUND = re.compile(r"\bbind<\s*(?:[\w:]+::)?(I[A-Z]\w*)\s*>")
_IMPLEMENTS = re.compile(r"\bpublic\s+(?:virtual\s+)?(?:[\w:]+::)?(I[A-Z]\w*)\b")
_TASK_CHECK = re.compile(r"\b(I[A-Z]\w*)::kTask\b")
_AUDIO_PLAN_STRUCT = re.compile(r"\b(?:struct|class)\s+(\w*Audio\w*Plan)\b")
_ENTRY = re.compile(r"\b(generate\w*)\s*\(([^)]*)(\))?")
_NOT_TASKS = frozenset({"model", "task"})
# A route's limits as its build enforces them: `request.precision != "fp16"`, `request.max_batch_size != 1`, ...
_BUILD_LIMIT = re.compile(r"""\brequest\.(precision|max_batch_size|tensor_parallel_size|context_parallel_size)\s*!=\s*["']?([\w.]+)["']?""")


class FamilyCode(msgspec.Struct, kw_only=True):
    """One family's code facts, each an Evidence whose value is the name read (line text in `line`)."""

    build_files: list[str] = []
    runtime_files: list[str] = []
    built: list[Evidence] = []
    loaded: list[Evidence] = []
    bound: list[Evidence] = []
    implemented: list[Evidence] = []
    task_checks: list[Evidence] = []
    audio_plan_structs: list[Evidence] = []
    entries: list[tuple[str, str, bool, Evidence]] = []
    # Limits a build file that admits an audio-QA Task enforces on its request (value "precision fp16", ...).
    build_limits: list[Evidence] = []
    # Build files the audit could not parse: "path: reason".
    unreadable: list[str] = []


def _hits(doc: SourceDocument, pattern: re.Pattern[str], claim: str) -> Iterable[tuple[re.Match[str], Evidence]]:
    for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
        for m in pattern.finditer(line):
            yield m, Evidence(claim=claim, file=doc.path, field=f"line {n}", value=m.group(1))


def _is_build(path: str) -> bool:
    return path.endswith(".py")


def read_code(docs: Iterable[SourceDocument]) -> FamilyCode:
    """The facts of one family's build (.py) and runtime (.cpp/.h) documents."""
    code = FamilyCode()
    for doc in sorted(docs, key=lambda d: d.path):
        if _is_build(doc.path):
            code.build_files.append(doc.path)
            try:
                ast.parse(doc.data.decode("utf-8", "replace"), filename=doc.path)
            except SyntaxError as exc:
                code.unreadable.append(f"{doc.path}: not valid Python (line {exc.lineno}: {exc.msg})")
            for pattern in _BUILT:
                code.built += [ev for _, ev in _hits(doc, pattern, "section_built")]
            text = doc.data.decode("utf-8", "replace")
            if any(f'"{task}"' in text or f"'{task}'" in text for task in AUDIO_QA_TASKS):
                code.build_limits += [msgspec.structs.replace(ev, claim="route:build", value=f"{m.group(1)} {m.group(2)}")
                                      for m, ev in _hits(doc, _BUILD_LIMIT, "route:build")]
            continue
        code.runtime_files.append(doc.path)
        if doc.path.endswith((".cpp", ".cc")):
            for pattern in _LOADED:
                code.loaded += [ev for _, ev in _hits(doc, pattern, "section_loaded")]
        code.bound += [msgspec.structs.replace(ev, value=interface_task(m.group(1)))
                       for m, ev in _hits(doc, _BOUND, "task_bound")]
        code.implemented += [msgspec.structs.replace(ev, value=interface_task(m.group(1)))
                             for m, ev in _hits(doc, _IMPLEMENTS, "task_implemented")
                             if interface_task(m.group(1)) not in _NOT_TASKS]
        code.task_checks += [msgspec.structs.replace(ev, value=interface_task(m.group(1)))
                             for m, ev in _hits(doc, _TASK_CHECK, "task_checked")]
        if doc.path.endswith(".h"):
            code.audio_plan_structs += [ev for _, ev in _hits(doc, _AUDIO_PLAN_STRUCT, "audio_plan_declared")]
        if doc.path.endswith("pipeline.h"):
            for m, ev in _hits(doc, _ENTRY, "entry_point"):
                code.entries.append((m.group(1), (m.group(2) or "").strip().rstrip(","), bool(m.group(3)), ev))
    # Dedupe identical (file, line, name) hits of the two patterns per side.
    code.built = list({(e.file, e.field, e.value): e for e in code.built}.values())
    code.loaded = list({(e.file, e.field, e.value): e for e in code.loaded}.values())
    return code
