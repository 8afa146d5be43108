"""Read a family's `support.py` (the current layout's declaration of its Tasks) without running it.
Pure; never raises (an unreadable file is its `error`).
"""

from __future__ import annotations

import ast

import msgspec

from orchestrator.inventory.records import DeclaredTask, Evidence, SourceDocument

__all__ = ["SupportFacts", "read_support"]


class SupportFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What one support.py declares; `error` says why nothing could be read."""

    file: str
    tasks: list[DeclaredTask] = []
    default_tasks: list[Evidence] = []
    default_precision: Evidence | None = None
    required_files: list[Evidence] = []
    error: str = ""


def _strings(node: ast.AST) -> list[tuple[str, int]]:
    """String constants inside an expression (a literal, a tuple of them, a conditional), with lines."""
    return [(n.value, n.lineno) for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


class _Reader(ast.NodeVisitor):
    """Walks the module once, keeping the enclosing `if` tests and the names assigned so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.conditions: list[str] = []
        self.assigned: dict[str, ast.expr] = {}
        self.assigned_src: dict[str, str] = {}
        self.tasks: list[DeclaredTask] = []
        self.defaults: list[Evidence] = []
        self.precision: Evidence | None = None
        self.required: list[Evidence] = []

    def _condition(self) -> str:
        return " and ".join(self.conditions)

    def _add_tasks(self, node: ast.AST) -> None:
        for value, line in _strings(node):
            self.tasks.append(DeclaredTask(task=value, file=self.path, line=line, condition=self._condition()))

    def _resolve(self, node: ast.expr) -> ast.expr:
        """A bare name (`tasks=tuple(tasks)`, `default_task=default`) to what it was assigned."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            node = node.args[0]
        if isinstance(node, ast.Name) and node.id in self.assigned:
            return self.assigned[node.id]
        return node

    def visit_If(self, node: ast.If) -> None:
        test = ast.unparse(node.test)
        where = self.assigned_src.get(test)
        self.conditions.append(f"{test} ({where})" if where else test)
        for child in node.body:
            self.visit(child)
        self.conditions.pop()
        self.conditions.append(f"not ({test})")
        for child in node.orelse:
            self.visit(child)
        self.conditions.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if not isinstance(target, ast.Name):
                continue
            self.assigned[target.id] = node.value
            self.assigned_src[target.id] = ast.unparse(node)
            name = target.id.lower()
            if name == "tasks" and isinstance(node.value, (ast.List, ast.Tuple, ast.Set)):
                self._add_tasks(node.value)
            elif ("required" in name or "files" in name) and isinstance(node.value, (ast.List, ast.Tuple, ast.Set)):
                self.required += [Evidence(claim="required_file", file=self.path, field=f"line {line}", value=value)
                                  for value, line in _strings(node.value)]
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "add") \
                and isinstance(func.value, ast.Name) and func.value.id.lower() == "tasks":
            for arg in node.args:
                self._add_tasks(arg)
        for kw in node.keywords:
            if kw.arg == "tasks":
                # `tuple(tasks)` of a list built above resolves to it: counted again, kept once (first seen).
                self._add_tasks(self._resolve(kw.value))
            elif kw.arg == "default_task":
                self.defaults += [Evidence(claim="default_task", file=self.path, field=f"line {line}", value=value)
                                  for value, line in _strings(self._resolve(kw.value))]
            elif kw.arg == "default_precision":
                found = _strings(self._resolve(kw.value))
                if found:
                    self.precision = Evidence(claim="family_default_precision", file=self.path,
                                              field=f"line {found[0][1]}", value=found[0][0].lower())
        self.generic_visit(node)


def read_support(doc: SourceDocument) -> SupportFacts:
    """The Tasks, defaults and required files one support.py declares.

    Parsed with `ast`: the Task names given to `tasks=` (literals, or a name built up with `.append` / `.extend`),
    `default_task=`, `default_precision=`, and the checkpoint files it requires (a set, list or tuple of file names
    assigned to a name with `required` or `files` in it). Each with its line, and each appended Task with the `if` it
    sits under.
    """
    try:
        tree = ast.parse(doc.data.decode("utf-8", "replace"), filename=doc.path)
    except SyntaxError as exc:
        return SupportFacts(file=doc.path, error=f"not valid Python (line {exc.lineno}: {exc.msg})")
    reader = _Reader(doc.path)
    reader.visit(tree)
    first: dict[tuple[str, int], DeclaredTask] = {}
    for t in reader.tasks:
        first.setdefault((t.task, t.line), t)
    tasks = list(first.values())
    if not tasks:
        return SupportFacts(file=doc.path, error="declares no Task the audit can read (no `tasks=` literal, "
                            "no list of Task names)", default_precision=reader.precision,
                            required_files=reader.required)
    return SupportFacts(file=doc.path, tasks=tasks, default_tasks=reader.defaults, default_precision=reader.precision,
                        required_files=reader.required)
