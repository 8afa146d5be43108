"""The import graph of orchestrator/ and adapters/: every import counts (top level, under TYPE_CHECKING, inside a
function), no circle joins two files or two packages, no module imports another module's private name, adapters
see only the core's outer surface, and orchestrator/'s top holds only its entry points."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache  # one parse of the tree serves every test below (none changes what it returns)
def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for top in ("orchestrator", "adapters"):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterable[tuple[str, str, int]]:
    """(imported module, imported name or "", line) for every import in `path`, resolved to project modules."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def owner(dotted: str) -> str:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if target := owner(alias.name):
                    yield target, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                # `from pkg import mod` imports the module; `from mod import name` imports from the module.
                target = full if full in modules else owner(source)
                if target:
                    yield target, "" if full in modules else alias.name, node.lineno


@functools.cache
def _graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    private: list[str] = []
    for name, path in modules.items():
        for target, imported, line in _imports(name, path, modules):
            if target != name:
                edges[name].add(target)
            if imported.startswith("_") and not imported.startswith("__") and target != name:
                private.append(f"{path.relative_to(ROOT)}:{line}: {imported} from {target}")
    return edges, private


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package(module: str, modules: dict[str, Path]) -> str:
    """A module's package: its folder (`orchestrator.soak`), or the module itself for a loose top-level one."""
    if modules[module].name == "__init__.py" or module.count(".") < 2:
        return module
    return module.rpartition(".")[0]


def test_no_circle_between_files() -> None:
    """A module that imports another, directly or through others, is never imported back by it."""
    edges, _ = _graph()
    assert _circles(edges) == []


def test_no_circle_between_packages() -> None:
    """Packages (folders, and the loose top-level modules) import each other one way: a shared piece lives a layer
    down, where both sides import it."""
    edges, _ = _graph()
    modules = _modules()
    packages: dict[str, set[str]] = {}
    for source, targets in edges.items():
        mine = _package(source, modules)
        packages.setdefault(mine, set()).update(p for t in targets if (p := _package(t, modules)) != mine)
    assert _circles(packages) == []


def test_no_module_imports_another_modules_private_name() -> None:
    """A name starting with `_` stays in its module: what two modules share is public in one of them."""
    _, private = _graph()
    assert private == []


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Imports under TYPE_CHECKING, inside functions and relative ones all count (so the checks above can fail)."""
    modules = {"orchestrator.a": tmp_path / "a.py", "orchestrator.b": tmp_path / "b.py",
               "orchestrator.c": tmp_path / "c.py"}
    modules["orchestrator.a"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from orchestrator.b import _Hidden\n")
    modules["orchestrator.b"].write_text("def f():\n    from . import c\n")
    modules["orchestrator.c"].write_text("import orchestrator.a\n")
    found = {name: sorted(_imports(name, path, modules)) for name, path in modules.items()}
    assert found == {"orchestrator.a": [("orchestrator.b", "_Hidden", 3)],
                     "orchestrator.b": [("orchestrator.c", "", 2)],
                     "orchestrator.c": [("orchestrator.a", "", 1)]}
    edges = {name: {t for t, _, _ in imports} for name, imports in found.items()}
    assert _circles(edges) == [["orchestrator.a", "orchestrator.b", "orchestrator.c"]]


# What adapters may see of the core (docs/development.md's map): the schema, the configuration, the ground floor
# and the Protocols they implement; Ray's adapter also the campaign's Cluster port and its events.
_ADAPTERS_SEE = ("orchestrator.events", "orchestrator.config", "orchestrator.base", "orchestrator.spine.ports")
_RAY_SEES = ("orchestrator.campaign.ports", "orchestrator.campaign.events")


def _within(module: str, allowed: tuple[str, ...]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


def test_adapters_import_only_the_cores_outer_surface() -> None:
    """An adapter imports from orchestrator/ only events, config, base and spine.ports (Ray's also the campaign's
    port and events): the core's behaviour is never an adapter's dependency."""
    edges, _ = _graph()
    reaching = sorted(f"{source} -> {target}" for source, targets in edges.items() if source.startswith("adapters")
                      for target in targets if target.startswith("orchestrator")
                      and not _within(target, _ADAPTERS_SEE + (_RAY_SEES if source.startswith("adapters.ray") else ())))
    assert reaching == []


def test_the_top_of_orchestrator_holds_only_its_entry_points() -> None:
    """`ls orchestrator/` shows the layers and the uses: besides cli.py and __main__.py every module is in a folder."""
    loose = sorted(p.name for p in (ROOT / "orchestrator").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "cli.py"]
