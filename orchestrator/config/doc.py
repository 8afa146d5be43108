"""The configuration reference (docs/configuration.md) rendered from the Structs of orchestrator/config/. Pure
apart from reading the source of the modules that define the Structs."""

from __future__ import annotations

import ast
import inspect
import json
import sys

import msgspec
import msgspec.inspect as mi

from orchestrator.base.errors import ConfigError
from orchestrator.config import RESERVED_KEYS, Config

__all__ = ["DocRow", "field_docs", "doc_rows", "render_doc", "DOC_PATH"]

# Where the rendered reference lives in the repository, relative to its root.
DOC_PATH = "docs/configuration.md"

_HEADER = """\
# Configuration reference (`bench.toml`)

<!-- Generated from orchestrator/config/ by `aqbench config reference --out docs/configuration.md`.
     Edit the docstrings there, not this file: tests/orchestrator/config/test_config_doc.py fails when it is stale. -->

Every command reads `bench.toml` (or `--config PATH`); the shipped one qualifies the embedded reference
server and runs as it is. Relative paths resolve against the config file's folder. Wrong types, unknown
keys, missing keys and impossible values are refused with an error naming the file, the key path and what
was expected (for example `bench.toml: server.port: expected int >= 1`). `aqbench config check` prints the
resolved configuration. A key left out takes its default; "unset" means the key is absent.
"""


class DocRow(msgspec.Struct, frozen=True, kw_only=True):
    """One key: its table (`[server.restart]`), name, type and default as written in the reference, the
    default's value (None when unset or required) and its meaning."""

    table: str
    key: str
    type: str
    default: str
    value: object  # the default as a TOML value (None when required or unset)
    meaning: str


# Each key's meaning is the attribute docstring under its field in orchestrator/config/, so it is written
# once; a key without one is refused. Types and defaults come from the Structs themselves.
def field_docs(source: str) -> dict[str, tuple[str, dict[str, str]]]:
    """Class name -> (class docstring, field name -> the attribute docstring under the field), from Python
    source. A field's docstring is the string literal statement right after its annotated assignment."""
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, str] = {}
        for stmt, after in zip(node.body, [*node.body[1:], None], strict=True):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                fields[stmt.target.id] = inspect.cleandoc(after.value.value)
        out[node.name] = (inspect.cleandoc(ast.get_docstring(node) or ""), fields)
    return out


def _struct_of(t: mi.Type) -> mi.StructType | None:
    """The Struct a field holds (itself, optional, or a list of it): a table, not a key."""
    if isinstance(t, mi.StructType):
        return t
    if isinstance(t, mi.UnionType):
        structs = [s for s in t.types if isinstance(s, mi.StructType)]
        return structs[0] if len(structs) == 1 else None
    if isinstance(t, mi.ListType) and isinstance(t.item_type, mi.StructType):
        return t.item_type
    return None


def _bounds(t: mi.IntType | mi.FloatType) -> str:
    parts = [f"{op} {value:g}" for op, value in ((">=", t.ge), (">", t.gt), ("<=", t.le), ("<", t.lt))
             if value is not None]
    return " " + ", ".join(parts) if parts else ""


def _type(t: mi.Type) -> str:
    """A field's type in a reader's words, with the bounds the loader enforces."""
    if isinstance(t, mi.UnionType):
        others = [x for x in t.types if not isinstance(x, mi.NoneType)]
        return " or ".join(_type(x) for x in others) + (" (optional)" if len(others) < len(t.types) else "")
    if isinstance(t, mi.LiteralType):
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in t.values)
    if isinstance(t, mi.StrType):
        return "string" + (f" matching `{t.pattern}`" if t.pattern else "") + \
            (f" of at least {t.min_length} characters" if t.min_length and not t.pattern else "")
    if isinstance(t, mi.BoolType):
        return "boolean"
    if isinstance(t, mi.IntType):
        return "integer" + _bounds(t)
    if isinstance(t, mi.FloatType):
        return "number" + _bounds(t)
    if isinstance(t, mi.ListType):
        least = f" (at least {t.min_length})" if t.min_length else ""
        return f"list of {_type(t.item_type)}{least}"
    if isinstance(t, mi.DictType):
        return f"table of {_type(t.value_type)}"
    raise TypeError(f"config doc: no wording for the type {t!r}; add one to _type()")


def _toml(value: object) -> str:
    """A default as TOML would write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}" if value else "{}"
    raise TypeError(f"config doc: cannot write the default {value!r} as TOML")


def _default(field: mi.Field) -> tuple[str, object]:
    if field.required:
        return "required", None
    value = field.default_factory() if field.default is msgspec.NODEFAULT else field.default
    return ("unset", None) if value is None else (f"`{_toml(value)}`", value)


class _Tables:
    """Walks the Struct tree depth first, in field order: a table's own keys, then its sub-tables."""

    def __init__(self, docs: dict[str, tuple[str, dict[str, str]]]) -> None:
        self.docs = docs
        self.rows: list[DocRow] = []
        self.tables: list[tuple[str, str, str, str]] = []  # (path, heading, field docstring, class docstring)

    def _fields(self, cls: type) -> dict[str, str]:
        """Field docstrings of `cls` and of the Structs it inherits fields from (ModelConfig's identity is
        declared by orchestrator/base/identity.py's ModelIdentity), the class's own first."""
        fields: dict[str, str] = {}
        for base in cls.__mro__:
            if not (isinstance(base, type) and issubclass(base, msgspec.Struct)) or base is msgspec.Struct:
                continue
            if base.__name__ not in self.docs:
                self.docs.update(field_docs(inspect.getsource(sys.modules[base.__module__])))
            for key, doc in self.docs.get(base.__name__, ("", {}))[1].items():
                fields.setdefault(key, doc)
        return fields

    def walk(self, struct: mi.StructType, path: str, heading: str, lead: str) -> None:
        name = struct.cls.__name__
        fields = self._fields(struct.cls)  # loads the docstrings of the module that declares the table
        class_doc = self.docs.get(name, ("", {}))[0]
        if path:
            self.tables.append((path, heading, lead, class_doc))
        subtables: list[tuple[mi.Field, mi.StructType]] = []
        # A table with inherited keys lists its `name` first, as bench.toml writes it (a Struct orders the
        # fields it inherits before its own: ModelConfig's identity before its name).
        inherits = any(issubclass(b, msgspec.Struct) and b.__struct_fields__ for b in struct.cls.__mro__[1:]
                       if isinstance(b, type) and b is not msgspec.Struct)
        for field in sorted(struct.fields, key=lambda f: inherits and f.name != "name"):
            if not path and field.name in RESERVED_KEYS:
                continue
            sub = _struct_of(field.type)
            if sub is not None:
                subtables.append((field, sub))
                continue
            meaning = fields.get(field.name)
            if not meaning:
                raise ConfigError(f"{name}.{field.name} ([{path}] {field.encode_name}) has no docstring: write "
                                  f"its meaning as a string on the line under the field in {struct.cls.__module__}")
            default, value = _default(field)
            self.rows.append(DocRow(table=path, key=field.encode_name, type=_type(field.type),
                                          default=default, value=value, meaning=" ".join(meaning.split())))
        for field, sub in subtables:
            child = f"{path}.{field.encode_name}" if path else field.encode_name
            many = isinstance(field.type, mi.ListType)
            optional = isinstance(field.type, mi.UnionType)
            title = f"`[[{child}]]` (one or more)" if many else f"`[{child}]`" + (" (optional)" if optional else "")
            self.walk(sub, child, title, fields.get(field.name, ""))


def _walk(root: type[msgspec.Struct], source: str | None) -> _Tables:
    module = sys.modules[root.__module__]
    tables = _Tables(field_docs(source if source is not None else inspect.getsource(module)))
    info = mi.type_info(root)
    assert isinstance(info, mi.StructType)
    tables.walk(info, "", "", "")
    return tables


def doc_rows(root: type[msgspec.Struct] = Config, *, source: str | None = None) -> list[DocRow]:
    """Every key of `root`'s tables, in file order. Raises ConfigError for a key without a docstring."""
    return _walk(root, source).rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _intro(class_doc: str) -> str:
    """A table's docstring without its `[name]:` lead, which the heading already says."""
    if class_doc.startswith("[") and "]: " in class_doc.split("\n", 1)[0]:
        class_doc = class_doc.split("]: ", 1)[1]
        class_doc = class_doc[:1].upper() + class_doc[1:]
    return class_doc


def render_doc(root: type[msgspec.Struct] = Config, *, source: str | None = None) -> str:
    """docs/configuration.md's text: one section per table with its keys' type, default and meaning."""
    walked = _walk(root, source)
    lines = [_HEADER]
    for table, heading, lead, class_doc in walked.tables:
        lines += [f"## {heading}", ""]
        lines += [line for text in (lead, _intro(class_doc)) if text for line in (text, "")]
        rows = [r for r in walked.rows if r.table == table]
        if rows:
            lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
            lines += [f"| `{r.key}` | {_cell(r.type)} | {_cell(r.default)} | {_cell(r.meaning)} |" for r in rows]
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
