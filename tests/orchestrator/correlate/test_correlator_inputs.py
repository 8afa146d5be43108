"""The correlator's bus subscription asks for exactly the kinds its handler reads: a kind read but not asked for
would never arrive."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[3] / "orchestrator" / "correlate" / "live.py"


def test_the_subscribed_kinds_are_the_handled_kinds() -> None:
    tree = ast.parse(SOURCE.read_text())
    subscribed: set[str] = set()
    handled: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_INPUTS" for t in node.targets):
            assert isinstance(node.value, ast.Tuple)
            subscribed = {e.id for e in node.value.elts if isinstance(e, ast.Name)}
        if isinstance(node, ast.FunctionDef) and node.name == "_handle":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "isinstance":
                    handled.add(ast.unparse(call.args[1]))
    assert subscribed and subscribed == handled
