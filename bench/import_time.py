"""What the command modules' function-local imports buy: `aqbench --help` and `aqbench soak --help` wall time with
the imports as they are, and with them hoisted to the top of their modules, side by side.

Usage: nice -n 19 .venv/bin/python bench/import_time.py [--runs 15] [--keep DIR]

The hoisted variant is built automatically in a temporary copy of orchestrator/ and adapters/: every import
inside a function of orchestrator/commands/*.py and orchestrator/cli.py moves to the top of its module (one
inside a try, an optional extra, stays local, as does one whose name another local import binds differently).
Each variant runs as a fresh subprocess of this interpreter with PYTHONPATH on its tree (checked: the variant's
own orchestrator package is the one loaded), alternating variants run by run so that load on the machine falls
on both alike; it prints each variant's median, quartiles and the ratio, and the modules each variant loads.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [["--help"], ["soak", "--help"]]


def _local_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports inside functions, except those inside a try (an optional extra, ImportError handled)."""
    found: list[ast.Import | ast.ImportFrom] = []
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            guarded.update(id(n) for n in ast.walk(node))
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in guarded:
                    found.append(node)
    return found


def _bindings(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """Name bound -> what it is bound to, for one import statement."""
    if isinstance(node, ast.Import):
        return {(a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0]) for a in node.names}
    return {(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names}


def hoist(path: Path) -> int:
    """Move `path`'s function-local imports to its top; returns how many statements moved."""
    source = path.read_text()
    tree = ast.parse(source)
    local = _local_imports(tree)
    bound: dict[str, set[str]] = {}
    for node in local:
        for name, target in _bindings(node).items():
            bound.setdefault(name, set()).add(target)
    # Names the module defines itself (a function `run` beside a local `from x import run`) stay local.
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    movable = [n for n in local if all(len(bound[name]) == 1 and name not in defined for name in _bindings(n))]
    if not movable:
        return 0
    lines = source.splitlines(keepends=True)
    # Blank out each moved statement (a `pass` keeps a body that held only imports valid).
    for node in sorted(movable, key=lambda n: n.lineno, reverse=True):
        assert node.end_lineno is not None
        indent = lines[node.lineno - 1][: node.col_offset]
        lines[node.lineno - 1: node.end_lineno] = [f"{indent}pass\n"]
    hoisted = []
    for node in movable:
        text = ast.unparse(node)
        if text not in hoisted:
            hoisted.append(text)
    # After the last top-level import (the __future__ import and the docstring stay first).
    last = max((n.end_lineno or n.lineno for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)), default=0)
    lines[last:last] = [t + "\n" for t in hoisted]
    path.write_text("".join(lines))
    return len(movable)


def build_hoisted(dest: Path) -> int:
    """A copy of the tree with the command modules' local imports hoisted; returns the statements moved."""
    for top in ("orchestrator", "adapters"):
        shutil.copytree(ROOT / top, dest / top, ignore=shutil.ignore_patterns("__pycache__"))
    moved = 0
    for path in [*sorted((dest / "orchestrator" / "commands").glob("*.py")), dest / "orchestrator" / "cli.py"]:
        moved += hoist(path)
    return moved


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both trees run from compiled bytecode after the first run
    return env


def _command(args: list[str]) -> list[str]:
    return [sys.executable, "-c", "import sys; from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def _check(tree: Path, args: list[str]) -> int:
    """Runs once (which also compiles the tree's bytecode) and returns how many modules the command loads;
    fails when the tree's own orchestrator is not the one imported or the command fails."""
    code = ("import sys, orchestrator, atexit; "
            "atexit.register(lambda: print('LOADED', orchestrator.__file__, len(sys.modules), file=sys.stderr)); "
            "from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, *args], env=_env(tree), capture_output=True, text=True,
                          timeout=120, cwd=tree)
    line = next((x for x in done.stderr.splitlines() if x.startswith("LOADED")), "")
    if done.returncode != 0 or not line or not line.split()[1].startswith(str(tree)):
        sys.exit(f"import_time: {' '.join(args)} under {tree} failed or loaded another tree (exit "
                 f"{done.returncode}): {done.stderr[-2000:]}")
    return int(line.split()[2])


def _time(tree: Path, args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(_command(args), env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, timeout=120, cwd=tree)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="runs per variant and command (at least 10)")
    parser.add_argument("--keep", type=Path, default=None, help="build the hoisted tree here and keep it")
    opts = parser.parse_args()
    if opts.runs < 10:
        parser.error("--runs: at least 10 (a median of fewer says little on a shared machine)")
    with tempfile.TemporaryDirectory(prefix="aqbench-hoisted-") as tmp:
        hoisted = opts.keep or Path(tmp)
        hoisted.mkdir(parents=True, exist_ok=True)
        moved = build_hoisted(hoisted)
        variants = {"local (as is)": ROOT, "hoisted": hoisted}
        print(f"{moved} function-local import statements hoisted in orchestrator/commands/*.py and cli.py; "
              f"{opts.runs} runs per variant and command, alternating; python {sys.version.split()[0]}")
        for args in COMMANDS:
            modules = {name: _check(tree, args) for name, tree in variants.items()}
            times: dict[str, list[float]] = {name: [] for name in variants}
            for i in range(opts.runs):
                order = list(variants.items()) if i % 2 == 0 else list(reversed(variants.items()))
                for name, tree in order:
                    times[name].append(_time(tree, args))
            print(f"\naqbench {' '.join(args)}")
            for name, got in times.items():
                q = statistics.quantiles(got, n=4)
                print(f"  {name:14} median {statistics.median(got) * 1000:7.0f} ms  (quartiles {q[0] * 1000:.0f}-"
                      f"{q[2] * 1000:.0f} ms)  {modules[name]} modules loaded")
            ratio = statistics.median(times["hoisted"]) / statistics.median(times["local (as is)"])
            print(f"  hoisted / local: {ratio:.2f}x")


if __name__ == "__main__":
    main()
