"""What the checkout's served chat route accepts: the content parts of trtmc-server's chat schema. Pure."""

from __future__ import annotations

import ast

from orchestrator.inventory.paths import SERVER_SCHEMA
from orchestrator.inventory.records import Evidence, ServedRoute, SourceDocument

__all__ = ["read_route"]


def _literal_types(node: ast.AnnAssign) -> list[str]:
    ann = node.annotation
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value).rsplit(".", 1)[-1] == "Literal":
        return [n.value for n in ast.walk(ann.slice) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return []


def read_route(doc: SourceDocument | None) -> ServedRoute:
    """The route's accepted part types with the lines that show them; absent or unreadable says so.

    Parsed with `ast`, never run: every class whose `type` field is a `Literal[...]` is a content part of those types;
    the part classes a message's `content` annotation names are the ones the route accepts (all part classes when it
    names none). The route takes audio when an accepted part type names audio (`input_audio`, `audio_url`, ...).
    """
    if doc is None:
        return ServedRoute(file=SERVER_SCHEMA, present=False, accepts_audio=None,
                           error="the checkout has no served chat schema (no trtmc-server front end)",
                           evidence=[Evidence(claim="route:absent", file=SERVER_SCHEMA, field="absent from the checkout",
                                              value="no served chat schema")])
    text = doc.data.decode("utf-8", "replace")
    try:
        tree = ast.parse(text, filename=doc.path)
    except SyntaxError as exc:
        return ServedRoute(file=doc.path, present=True, error=f"not valid Python (line {exc.lineno}: {exc.msg})")
    parts: dict[str, tuple[list[str], Evidence]] = {}
    contents: list[tuple[ast.AnnAssign, Evidence]] = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            source = ast.get_source_segment(text, stmt) or ast.unparse(stmt)
            where = Evidence(claim="route:part", file=doc.path, field=f"line {stmt.lineno}", value=f"{cls.name}: {source}")
            if stmt.target.id == "type" and (types := _literal_types(stmt)):
                parts[cls.name] = (types, where)
            elif stmt.target.id == "content" and "message" in cls.name.lower():
                contents.append((stmt, Evidence(claim="route:content", file=doc.path, field=f"line {stmt.lineno}",
                                                value=f"{cls.name}: {source}")))
    if not contents:
        return ServedRoute(file=doc.path, present=True,
                           error="no chat message `content` field found: which parts it accepts cannot be read")
    named = {n.id for stmt, _ in contents for n in ast.walk(stmt.annotation) if isinstance(n, ast.Name)}
    accepted = [name for name in parts if name in named] or list(parts)
    types = sorted({t for name in accepted for t in parts[name][0]})
    evidence = [ev for _, ev in contents] + [parts[name][1] for name in accepted]
    return ServedRoute(file=doc.path, present=True, accepts_audio=any("audio" in t.lower() for t in types),
                       part_types=types, evidence=evidence)
