"""Loading bench.toml: validation with errors naming file, key path and fix; relative paths resolved."""

from __future__ import annotations

import hashlib
import re
import tomllib
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from orchestrator.base.errors import ConfigError
from orchestrator.config.common import PLACEHOLDERS
from orchestrator.config.correctness import CorrectnessCriteria, NoninferiorityCriteria
from orchestrator.config.misspelt import closest, key_line
from orchestrator.config.models import ModelConfig
from orchestrator.config.root import RESERVED_KEYS, Config

__all__ = ["load_config", "config_from_dict", "config_to_dict"]


_PATH_RE = re.compile(r"at `\$((?:\.[A-Za-z0-9_-]+|\[\d+\])*)`")


def _key_path(message: str) -> tuple[str, str]:
    """Split msgspec's 'Expected X - at `$.a.b[0]`' into ('a.b[0]', 'Expected X')."""
    match = _PATH_RE.search(message)
    if not match:
        return "", message
    path = match.group(1).lstrip(".")
    what = message[: match.start()].rstrip(" -")
    return path, what


def _describe(what: str, key: str = "", text: str | None = None) -> str:
    what = what.replace("`", "")
    if what.startswith("Object contains unknown field"):
        return _unknown(what, key, text)
    if what.startswith("Object missing required field"):
        return what.replace("Object missing required field", "missing required key")
    return what[0].lower() + what[1:] if what else what


def _unknown(what: str, key: str, text: str | None) -> str:
    """'unknown key replcias, line 12: did you mean `replicas`?': the closest known key and the key's line."""
    name = what.removeprefix("Object contains unknown field").strip(" '\"")
    full = f"{key}.{name}" if key else name  # msgspec names the table that holds the unknown key
    parent = key
    line = key_line(text, full) if text is not None else None
    struct = _struct_at(parent)
    suggestion = closest(name, [f.encode_name for f in msgspec.structs.fields(struct)]) if struct else None
    where = f" (line {line})" if line is not None else ""
    fix = f"did you mean `{suggestion}`?" if suggestion else "remove it or fix its spelling"
    return f"unknown key {name}{where}: {fix}"


def _struct_at(path: str) -> type[msgspec.Struct] | None:
    """The Struct that holds the keys at `path` ('models[0]', 'server', '' for the top), None if none does."""
    tp: Any = Config  # a type annotation as typing's introspection takes and returns it
    for part in re.findall(r"[A-Za-z0-9_-]+|\[\d+\]", path):
        tp = _unwrap(tp)
        if part.startswith("["):
            args = typing.get_args(tp)
            tp = args[0] if args else None
        elif isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            tp = typing.get_type_hints(tp, include_extras=True).get(part)
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, msgspec.Struct) else None


def _allowed(key: str) -> list[str]:
    """The Literal choices of the field at `key` (e.g. 'workload.arms[1]'), for 'expected one of'."""
    tp: Any = Config  # as in _struct_at
    for part in re.findall(r"[A-Za-z0-9_-]+|\[\d+\]", key):
        tp = _unwrap(tp)
        if part.startswith("["):
            args = typing.get_args(tp)
            tp = args[0] if args else Any
        elif isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            tp = typing.get_type_hints(tp, include_extras=True).get(part, Any)
        else:
            return []
    tp = _unwrap(tp)
    return [repr(v) for v in typing.get_args(tp)] if typing.get_origin(tp) is Literal else []


def _unwrap(tp: Any) -> Any:  # noqa: ANN401  # a type annotation, as typing.get_origin takes it
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else tp
            if len(args) != 1:
                return tp
        else:
            return tp


_Fail = Callable[[str, str], None]


def _check_semantics(cfg: Config, where: str) -> None:
    def fail(key: str, what: str) -> None:
        raise ConfigError(f"{where}: {key}: {what}")

    w = cfg.workload
    if (w.concurrency is None) == (w.request_rate is None):
        fail("workload", "set exactly one of concurrency and request_rate "
             f"(got concurrency={w.concurrency}, request_rate={w.request_rate})")
    names = [m.name for m in cfg.models]
    for i, name in enumerate(names):
        if name in names[:i]:
            fail(f"models[{i}].name", f"duplicate model name {name!r}; names must be unique")
    for i, m in enumerate(cfg.models):
        _check_model(f"models[{i}]", m, fail)
    _check_placeholders("server.argv", cfg.server.argv, fail)
    if cfg.server.host not in ("127.0.0.1", "localhost", "::1") and not cfg.server.host.startswith("127."):
        fail("server.host", f"{cfg.server.host!r} is not a loopback address; servers here bind loopback only")
    r = cfg.server.restart
    if r.backoff_max_s < r.backoff_s:
        fail("server.restart.backoff_max_s", f"must be >= backoff_s ({r.backoff_s})")
    s = cfg.soak
    if s.window_s > s.duration_s:
        fail("soak.window_s", f"window ({s.window_s} s) is longer than duration ({s.duration_s} s)")
    _check_sweep(cfg, fail)
    if not cfg.dataset.name and not cfg.dataset.path:
        fail("dataset", "set name (a shipped dataset) or path (a dataset folder)")


def _check_model(key: str, m: ModelConfig, fail: _Fail) -> None:
    """One [[models]] entry: a correctness criterion, and a reference that can run and be compared."""
    c, ref = m.correctness, m.reference
    if c.min_pass_rate is None and c.noninferiority is None:
        fail(f"{key}.correctness", "set min_pass_rate, a [models.correctness.noninferiority] table, or both")
    if c.min_pass_rate is None and c.min_pass_rate_by_kind:
        fail(f"{key}.correctness.min_pass_rate_by_kind", "needs min_pass_rate beside it")
    if c.noninferiority is not None:
        if ref is None:
            fail(f"{key}.correctness.noninferiority", "needs a [models.reference] to compare against")
        _check_noninferiority(f"{key}.correctness.noninferiority", c.noninferiority, fail)
    if ref is not None and bool(ref.argv) == bool(ref.native_argv):
        fail(f"{key}.reference", "set exactly one of argv (a server) and native_argv (a worker)")
    _check_placeholders(f"{key}.reference.argv", ref.argv if ref is not None else [], fail)


def _check_noninferiority(key: str, ni: NoninferiorityCriteria, fail: _Fail) -> None:
    """Margins set by hand, or read from the owners' files (source), never both."""
    if not ni.source and ni.margin == 0.0 and ni.relative_margin == 0.0:
        fail(key, "set margin > 0 or relative_margin > 0 (points), "
             "or source = a TRTMC checkout to read the owners' gates from")
    if ni.source and (ni.margin or ni.relative_margin or ni.quantized_gate or ni.sampled_gate):
        fail(f"{key}.source", "the owners' files give the gates: "
             "remove margin, relative_margin, quantized_gate and sampled_gate, or remove source")
    for name, gate in (("quantized_gate", ni.quantized_gate), ("sampled_gate", ni.sampled_gate)):
        if gate is not None and gate.margin == 0.0 and gate.relative_margin == 0.0:
            fail(f"{key}.{name}", "set margin > 0 or relative_margin > 0")


def _check_placeholders(key: str, argv: Sequence[str], fail: _Fail) -> None:
    """Every {placeholder} in an argv is one aqbench fills in."""
    for j, arg in enumerate(argv):
        for field in re.findall(r"\{([^{}]*)\}", arg):
            if field not in PLACEHOLDERS:
                fail(f"{key}[{j}]", f"unknown placeholder {{{field}}}; allowed: "
                     + ", ".join("{" + p + "}" for p in PLACEHOLDERS))


def _check_sweep(cfg: Config, fail: _Fail) -> None:
    """[sweep] points ascend, and are whole numbers of concurrent requests in concurrency mode."""
    points = cfg.sweep.points
    if not points:
        fail("sweep.points", "give at least one offered load")
    if any(b <= a for a, b in zip(points, points[1:], strict=False)):
        fail("sweep.points", f"{points}: list the offered loads in ascending order, each once")
    if cfg.sweep.mode == "concurrency" and any(p != int(p) for p in points):
        fail("sweep.points", f"{points}: concurrency points are whole numbers of concurrent requests")


def _resolve(cfg: Config, base: Path) -> Config:
    def rel(p: str) -> str:
        if not p:
            return p
        path = Path(p).expanduser()
        return str(path if path.is_absolute() else (base / path).resolve())

    def with_source(c: CorrectnessCriteria) -> CorrectnessCriteria:
        ni = c.noninferiority
        if ni is None or not ni.source:
            return c
        return msgspec.structs.replace(c, noninferiority=msgspec.structs.replace(ni, source=rel(ni.source)))

    models = [
        msgspec.structs.replace(m, bundle=rel(m.bundle), tokenizer=rel(m.tokenizer), correctness=with_source(m.correctness))
        for m in cfg.models
    ]
    return msgspec.structs.replace(
        cfg,
        run=msgspec.structs.replace(cfg.run, output_dir=rel(cfg.run.output_dir), clip_cache=rel(cfg.run.clip_cache)),
        server=msgspec.structs.replace(cfg.server, cwd=rel(cfg.server.cwd), bundle=rel(cfg.server.bundle)),
        dataset=msgspec.structs.replace(cfg.dataset, path=rel(cfg.dataset.path)),
        publish=msgspec.structs.replace(cfg.publish, roots={k: rel(v) for k, v in cfg.publish.roots.items()}),
        models=models,
    )


# `data` is a TOML document as tomllib returns it: open until msgspec.convert checks it against Config.
def config_from_dict(data: dict[str, Any], *, where: str = "<config>", base: Path | None = None,
                     text: str | None = None) -> Config:
    """Validate a parsed TOML document (`text`, where given, its source: lines are named from it); raise
    ConfigError naming `where`, the key path and the fix."""
    workload = data.get("workload")
    if isinstance(workload, dict) and "request_rate" in workload and "concurrency" not in workload:
        # An open loop: the closed loop's default concurrency gives way (TOML cannot write "unset").
        data = {**data, "workload": {**workload, "concurrency": None}}
    try:
        cfg = msgspec.convert(data, Config, strict=True)
    except msgspec.ValidationError as exc:
        key, what = _key_path(str(exc))
        described = _describe(what, key, text)
        if what.startswith("Invalid enum value") and (choices := _allowed(key)):
            described = f"{described}; expected one of {', '.join(choices)}"
        raise ConfigError(f"{where}: {key or '(top level)'}: {described}") from None
    _check_semantics(cfg, where)
    return _resolve(cfg, base or Path.cwd())


def load_config(path: str | Path) -> Config:
    """Read and validate bench.toml. Blocks (file read). Raises ConfigError."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such configuration file; pass --config PATH or create bench.toml") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read configuration: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    for reserved in RESERVED_KEYS:
        if reserved in data:
            raise ConfigError(f"{p}: {reserved}: unknown key (reserved for aqbench's own bookkeeping)")
    cfg = config_from_dict(data, where=str(p), base=p.resolve().parent, text=text)
    _check_paths(cfg, where=str(p), given=data)
    return msgspec.structs.replace(cfg, source=str(p.resolve()), sha256=hashlib.sha256(raw).hexdigest())


def _check_paths(cfg: Config, *, where: str, given: dict[str, Any]) -> None:  # `given`: the TOML as written
    """Paths a run reads must exist: refused here, naming the key and the file, rather than later."""
    path = cfg.dataset.path
    if path and not Path(path).is_dir():
        written = (given.get("dataset") or {}).get("path", path)
        what = "is a file, not a dataset folder" if Path(path).exists() else "does not exist"
        raise ConfigError(f"{where}: dataset.path: {written!r} ({path}) {what}; set it to a dataset folder "
                          "(one with manifest.jsonl), relative to this file, or remove it to use [dataset] name")


# The TOML-shaped plain data `config check` prints and a sweep edits before config_from_dict reads it back.
def config_to_dict(cfg: Config) -> dict[str, Any]:
    """The resolved configuration as plain data (for `config check` and RunStarted)."""
    out: dict[str, Any] = msgspec.to_builtins(cfg)  # the Config's plain data, as above
    # Each model's name first, as bench.toml writes it (ModelIdentity, its base, declares the fields before it).
    out["models"] = [{"name": m["name"], **m} for m in out["models"]]
    return out

