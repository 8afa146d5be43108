"""bench.toml as typed msgspec Structs: `load_config()` validates and resolves paths.

Imports nothing from the project except errors. Every error names the file, the key path and what
was expected. Relative paths resolve against the config file's folder.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from orchestrator.errors import ConfigError

__all__ = [
    "Config",
    "RunConfig",
    "ServerConfig",
    "RestartPolicy",
    "ModelConfig",
    "CorrectnessCriteria",
    "NoninferiorityGate",
    "NoninferiorityCriteria",
    "ReferenceSide",
    "DatasetConfig",
    "WorkloadConfig",
    "SoakConfig",
    "InventoryConfig",
    "PublishConfig",
    "PUBLISH_ALLOWED_ENV",
    "CompareConfig",
    "ModelResources",
    "CampaignConfig",
    "load_config",
    "config_from_dict",
    "config_to_dict",
    "parse_duration",
    "ARMS",
    "PLACEHOLDERS",
]

ARMS = ("audio", "silence", "transcript")
PLACEHOLDERS = ("python", "host", "port", "records", "bundle", "model", "replicas", "run_dir")

PositiveInt = Annotated[int, Meta(ge=1)]
NonNegInt = Annotated[int, Meta(ge=0)]
PositiveFloat = Annotated[float, Meta(gt=0)]
NonNegFloat = Annotated[float, Meta(ge=0)]
Fraction = Annotated[float, Meta(ge=0, le=1)]
Port = Annotated[int, Meta(ge=1, le=65535)]
Arm = Literal["audio", "silence", "transcript"]
Name = Annotated[str, Meta(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")]
RunName = Annotated[str, Meta(pattern=r"^([A-Za-z0-9][A-Za-z0-9._:/-]*)?$")]  # "" = the command's name


class _Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class RunConfig(_Section, frozen=True, kw_only=True):
    """[run]: where runs go and what they are called (`runs/<name>-<timestamp>`; unset: the command's
    name, so `qualify-*`, `run-aiperf-*`, `soak-*`)."""

    output_dir: str = "runs"
    name: RunName = ""


class RestartPolicy(_Section, frozen=True, kw_only=True):
    """[server.restart]: `never`, or `on-failure` with at most `max_restarts` in `window_s`."""

    policy: Literal["never", "on-failure"] = "on-failure"
    max_restarts: NonNegInt = 3
    window_s: PositiveFloat = 600.0
    backoff_s: NonNegFloat = 1.0
    backoff_max_s: NonNegFloat = 30.0


class ServerConfig(_Section, frozen=True, kw_only=True):
    """[server]: the server under test. `argv` is a template over PLACEHOLDERS."""

    kind: Literal["reference", "trtmc-server"] = "reference"
    argv: Annotated[list[str], Meta(min_length=1)] = msgspec.field(default_factory=lambda: [
        "{python}", "-m", "adapters.reference", "--host", "{host}", "--port", "{port}",
        "--model-name", "{model}", "--records", "{records}", "--replicas", "{replicas}",
    ])
    host: str = "127.0.0.1"
    # None picks a free loopback port at start; 0 is refused because a port is needed.
    port: Port | None = None
    replicas: PositiveInt = 1
    env: dict[str, str] = {}
    cwd: str = ""
    bundle: str = ""
    startup_timeout_s: PositiveFloat = 300.0
    health_period_s: PositiveFloat = 1.0
    health_timeout_s: PositiveFloat = 1.0
    health_failure_threshold: PositiveInt = 3
    stop_signal: Literal["SIGINT", "SIGTERM"] = "SIGINT"
    stop_grace_s: NonNegFloat = 30.0
    sample_period_s: PositiveFloat = 1.0
    restart: RestartPolicy = RestartPolicy()


class NoninferiorityGate(_Section, frozen=True, kw_only=True):
    """A margin as the owners write one (`gate`, `quantized_gate`, `sampled_gate` in TRTMC's tasks.yaml):
    `margin` in points, `relative_margin` a fraction of the reference score (the larger applies)."""

    margin: NonNegFloat = 0.0
    relative_margin: NonNegFloat = 0.0


class NoninferiorityCriteria(_Section, frozen=True, kw_only=True):
    """[models.correctness.noninferiority]: paired non-inferiority of the model against its reference.

    `margin`/`relative_margin` is the gate; `quantized_gate` replaces it for a quantized candidate and
    `sampled_gate` (first) for a sampling one, as the owners choose. With `source` (a TRTMC checkout,
    at `revision` when set) the gates come from its apps/aiperf_qual files instead, for `benchmark`.
    """

    margin: NonNegFloat = 0.0
    relative_margin: NonNegFloat = 0.0
    # Below this reference score (points) the benchmark does not discriminate: not comparable.
    min_native: NonNegFloat | None = None
    quantized_gate: NoninferiorityGate | None = None
    sampled_gate: NoninferiorityGate | None = None
    # Arms whose scored (item, arm) problems are paired; empty = every arm of [dataset].
    arms: list[Arm] = []
    source: str = ""
    revision: str = ""
    # The Task benchmark in the owners' files that this workload is; empty = the dataset's name.
    benchmark: str = ""
    # Answers per problem and side when the candidate samples (the owners take three seeds).
    seeds: PositiveInt = 3


class CorrectnessCriteria(_Section, frozen=True, kw_only=True):
    """[models.correctness]: the family's own gates, applied unchanged.

    `scorer = "dataset"` scores each item by its manifest rule (exact, choice, numeric). `min_pass_rate`
    is the absolute gate (correctness stage, under load, soak windows); `noninferiority` judges the model
    against `[models.reference]`. At least one of them is set.
    """

    scorer: Literal["dataset", "exact", "choice", "numeric"] = "dataset"
    min_pass_rate: Fraction | None = None
    min_pass_rate_by_kind: dict[str, Fraction] = {}
    arm: Arm = "audio"
    deterministic: bool = True
    noninferiority: NoninferiorityCriteria | None = None


class ReferenceSide(_Section, frozen=True, kw_only=True):
    """[models.reference]: the model a non-inferiority gate compares against, run alone after the model.

    `argv` starts its own server (placeholders as [server].argv; one replica), or `native_argv` a
    JSON-lines worker; `precision` is what it computes at (for the report and the gate choice).
    """

    argv: list[str] = []
    native_argv: list[str] = []
    precision: str = ""
    # Per request; empty = [workload] request_timeout_s (a full-precision reference may be slower).
    request_timeout_s: PositiveFloat | None = None
    # Requests in flight at once on its own server (started with as many replicas); 1 = one at a time. Its
    # answers do not depend on it; its time does (two on two cores take about 60 % of one's).
    concurrency: PositiveInt = 1


class ModelResources(_Section, frozen=True, kw_only=True):
    """[models.resources]: what one model's campaign task holds on its node (Ray resources).

    `custom` names cluster resources such as a GPU type label (`{ "H100" = 1 }`); a task waits for a
    node that has them all. `memory_gib = 0` reserves no memory.
    """

    gpus: NonNegFloat = 0.0
    cpus: NonNegFloat = 1.0
    memory_gib: NonNegFloat = 0.0
    custom: dict[str, NonNegFloat] = {}


class ModelConfig(_Section, frozen=True, kw_only=True):
    """[[models]]: one checkpoint to qualify, with its identity and its correctness criteria."""

    name: Name
    family: str
    checkpoint: str
    profile: str = ""
    revision: str = ""
    precision: str = ""
    native_task: str = ""
    bundle: str = ""
    tokenizer: str = ""
    # Long-lived native worker speaking the JSON-lines protocol (trtmc.md section 2); empty = none.
    native_argv: list[str] = []
    correctness: CorrectnessCriteria
    resources: ModelResources = ModelResources()
    reference: ReferenceSide | None = None
    # Arguments added after [server] argv for this model's server only, with the same placeholders (a flag one
    # checkpoint needs; a fault injected into one candidate). Never given to its reference's server.
    server_args: list[str] = []


class DatasetConfig(_Section, frozen=True, kw_only=True):
    """[dataset]: a shipped dataset by `name`, or any dataset folder by `path`."""

    name: str = "audioqa-v2"
    path: str = ""
    arms: Annotated[list[Arm], Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: ["audio", "silence", "transcript"]
    )
    # The silence and transcript arms (conditioning evidence: the audio lift) run on this many items each,
    # dealt across the kinds in manifest order; 0 runs them on every item. The audio arm always has every item.
    conditioning_items: NonNegInt = 0


class WorkloadConfig(_Section, frozen=True, kw_only=True):
    """[workload]: the AIPerf run. Exactly one of `concurrency` and `request_rate`."""

    warmup_requests: NonNegInt = 4
    requests: PositiveInt = 40
    concurrency: PositiveInt | None = 2
    request_rate: PositiveFloat | None = None
    arrival_pattern: Literal["constant", "poisson"] = "constant"
    streaming: bool = False
    request_timeout_s: PositiveFloat = 60.0
    max_tokens: PositiveInt | None = None
    arms: Annotated[list[Arm], Meta(min_length=1)] = msgspec.field(default_factory=lambda: ["audio"])
    deadline_s: PositiveFloat = 600.0
    stop_grace_s: NonNegFloat = 10.0


class SoakConfig(_Section, frozen=True, kw_only=True):
    """[soak]: window length, checkpoints and the drift/leak limits."""

    duration_s: PositiveFloat = 8 * 3600.0
    window_s: PositiveFloat = 300.0
    warmup_windows: NonNegInt = 1
    checkpoint_every_s: PositiveFloat = 1800.0
    rss_limit_mib_per_h: NonNegFloat = 8.0
    p99_latency_limit_pct_per_h: NonNegFloat = 10.0
    max_error_rate: Fraction = 0.001
    # Minimum evidence of a trend verdict (drift, memory): judged windows after warmup and the time between
    # the first and last of them; below either the verdict is inconclusive.
    min_trend_windows: Annotated[int, Meta(ge=3)] = 6
    min_trend_span_s: NonNegFloat = 600.0
    trend_confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.95
    # Memory growth over the soak (last third of the windows' medians minus the first third) that fails.
    rss_growth_limit_mib: NonNegFloat = 64.0
    # Judged windows whose per-item medians are each item's latency baseline.
    latency_baseline_windows: PositiveInt = 3
    # Time without load between consecutive windows: at most this per gap, and this share of the soak.
    max_window_gap_s: NonNegFloat = 1.0
    max_gap_fraction: Fraction = 0.01


class InventoryConfig(_Section, frozen=True, kw_only=True):
    """[inventory]: checkpoints always audited, by Hugging Face id or profile name."""

    candidates: list[str] = []


# Variables whose values `aqbench publish` keeps: aqbench's own AIPerf settings, which reproduce a run.
PUBLISH_ALLOWED_ENV = ("AIPERF_RECORD_EXPORT_BATCH_SIZE", "AIPERF_METRICS_EXPORT_FLUSH_INTERVAL")
PlaceholderName = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9-]*$")]


class PublishConfig(_Section, frozen=True, kw_only=True):
    """[publish]: what `aqbench publish` replaces beyond its built-in roots, and which variables it keeps.

    `roots` maps a placeholder name to a folder (`models = "/models"` writes `<models>/...`); `names` are
    further host, user or project names to hide as `<name>`; `allowed_env` are the environment variables
    whose values may be published (every other value becomes `<env>`).
    """

    roots: dict[PlaceholderName, str] = {}
    names: list[Annotated[str, Meta(min_length=2)]] = []
    allowed_env: list[str] = msgspec.field(default_factory=lambda: list(PUBLISH_ALLOWED_ENV))
class CompareConfig(_Section, frozen=True, kw_only=True):
    """[compare]: when `aqbench compare` calls a change real. Latency and throughput tolerances are
    relative (0.05 = 5 %), rates absolute fractions of requests or items."""

    confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.90
    latency_tolerance: NonNegFloat = 0.05
    throughput_tolerance: NonNegFloat = 0.05
    error_rate_tolerance: Fraction = 0.01
    # Models that sample (correctness.deterministic = false) only; a deterministic model regresses on
    # any newly wrong item, and on any item whose completeness changed.
    correctness_tolerance: Fraction = 0.02
    resamples: Annotated[int, Meta(ge=200)] = 2000
    seed: NonNegInt = 0


class CampaignConfig(_Section, frozen=True, kw_only=True):
    """[campaign]: `aqbench campaign` on Ray: retries after a lost node, parallelism, what comes back.

    `max_parallel = 0` lets the cluster's free resources decide. A run-folder file larger than
    `bring_back_mib` stays on its node and is listed in the campaign report instead.
    """

    max_retries: NonNegInt = 2
    max_parallel: NonNegInt = 0
    stop_grace_s: PositiveFloat = 120.0
    bring_back_mib: NonNegFloat = 64.0


class Config(_Section, frozen=True, kw_only=True):
    """The whole resolved bench.toml; `source` and `sha256` identify the file it came from."""

    run: RunConfig = RunConfig()
    server: ServerConfig = ServerConfig()
    models: Annotated[list[ModelConfig], Meta(min_length=1)]
    dataset: DatasetConfig = DatasetConfig()
    workload: WorkloadConfig = WorkloadConfig()
    soak: SoakConfig = SoakConfig()
    inventory: InventoryConfig = InventoryConfig()
    publish: PublishConfig = PublishConfig()
    compare: CompareConfig = CompareConfig()
    campaign: CampaignConfig = CampaignConfig()
    source: str = ""
    sha256: str = ""


_PATH_RE = re.compile(r"at `\$((?:\.[A-Za-z0-9_-]+|\[\d+\])*)`")


def _key_path(message: str) -> tuple[str, str]:
    """Split msgspec's 'Expected X - at `$.a.b[0]`' into ('a.b[0]', 'Expected X')."""
    match = _PATH_RE.search(message)
    if not match:
        return "", message
    path = match.group(1).lstrip(".")
    what = message[: match.start()].rstrip(" -")
    return path, what


def _describe(what: str) -> str:
    what = what.replace("`", "")
    if what.startswith("Object contains unknown field"):
        return what.replace("Object contains unknown field", "unknown key") + " (remove it or fix its spelling)"
    if what.startswith("Object missing required field"):
        return what.replace("Object missing required field", "missing required key")
    return what[0].lower() + what[1:] if what else what


def _allowed(key: str) -> list[str]:
    """The Literal choices of the field at `key` (e.g. 'workload.arms[1]'), for 'expected one of'."""
    tp: Any = Config
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


def _unwrap(tp: Any) -> Any:
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
        c, ref = m.correctness, m.reference
        if c.min_pass_rate is None and c.noninferiority is None:
            fail(f"models[{i}].correctness", "set min_pass_rate, a [models.correctness.noninferiority] table, or both")
        if c.min_pass_rate is None and c.min_pass_rate_by_kind:
            fail(f"models[{i}].correctness.min_pass_rate_by_kind", "needs min_pass_rate beside it")
        if c.noninferiority is not None:
            ni = c.noninferiority
            if ref is None:
                fail(f"models[{i}].correctness.noninferiority", "needs a [models.reference] to compare against")
            if not ni.source and ni.margin == 0.0 and ni.relative_margin == 0.0:
                fail(f"models[{i}].correctness.noninferiority", "set margin > 0 or relative_margin > 0 (points), "
                     "or source = a TRTMC checkout to read the owners' gates from")
            if ni.source and (ni.margin or ni.relative_margin or ni.quantized_gate or ni.sampled_gate):
                fail(f"models[{i}].correctness.noninferiority.source", "the owners' files give the gates: "
                     "remove margin, relative_margin, quantized_gate and sampled_gate, or remove source")
            for key, gate in (("quantized_gate", ni.quantized_gate), ("sampled_gate", ni.sampled_gate)):
                if gate is not None and gate.margin == 0.0 and gate.relative_margin == 0.0:
                    fail(f"models[{i}].correctness.noninferiority.{key}", "set margin > 0 or relative_margin > 0")
        if ref is not None and bool(ref.argv) == bool(ref.native_argv):
            fail(f"models[{i}].reference", "set exactly one of argv (a server) and native_argv (a worker)")
        for j, arg in enumerate(ref.argv if ref is not None else []):
            for field in re.findall(r"\{([^{}]*)\}", arg):
                if field not in PLACEHOLDERS:
                    fail(f"models[{i}].reference.argv[{j}]", f"unknown placeholder {{{field}}}; allowed: "
                         + ", ".join("{" + p + "}" for p in PLACEHOLDERS))
    for i, arg in enumerate(cfg.server.argv):
        for field in re.findall(r"\{([^{}]*)\}", arg):
            if field not in PLACEHOLDERS:
                fail(f"server.argv[{i}]", f"unknown placeholder {{{field}}}; allowed: "
                     + ", ".join("{" + p + "}" for p in PLACEHOLDERS))
    if cfg.server.host not in ("127.0.0.1", "localhost", "::1") and not cfg.server.host.startswith("127."):
        fail("server.host", f"{cfg.server.host!r} is not a loopback address; servers here bind loopback only")
    r = cfg.server.restart
    if r.backoff_max_s < r.backoff_s:
        fail("server.restart.backoff_max_s", f"must be >= backoff_s ({r.backoff_s})")
    s = cfg.soak
    if s.window_s > s.duration_s:
        fail("soak.window_s", f"window ({s.window_s} s) is longer than duration ({s.duration_s} s)")
    if not cfg.dataset.name and not cfg.dataset.path:
        fail("dataset", "set name (a shipped dataset) or path (a dataset folder)")


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
        run=msgspec.structs.replace(cfg.run, output_dir=rel(cfg.run.output_dir)),
        server=msgspec.structs.replace(cfg.server, cwd=rel(cfg.server.cwd), bundle=rel(cfg.server.bundle)),
        dataset=msgspec.structs.replace(cfg.dataset, path=rel(cfg.dataset.path)),
        publish=msgspec.structs.replace(cfg.publish, roots={k: rel(v) for k, v in cfg.publish.roots.items()}),
        models=models,
    )


def config_from_dict(data: dict[str, Any], *, where: str = "<config>", base: Path | None = None) -> Config:
    """Validate a parsed TOML document; raise ConfigError naming `where`, the key path and the fix."""
    try:
        cfg = msgspec.convert(data, Config, strict=True)
    except msgspec.ValidationError as exc:
        key, what = _key_path(str(exc))
        described = _describe(what)
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
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    for reserved in ("source", "sha256"):
        if reserved in data:
            raise ConfigError(f"{p}: {reserved}: unknown key (reserved for aqbench's own bookkeeping)")
    cfg = config_from_dict(data, where=str(p), base=p.resolve().parent)
    _check_paths(cfg, where=str(p), given=data)
    return msgspec.structs.replace(cfg, source=str(p.resolve()), sha256=hashlib.sha256(raw).hexdigest())


def _check_paths(cfg: Config, *, where: str, given: dict[str, Any]) -> None:
    """Paths a run reads must exist: refused here, naming the key and the file, rather than later."""
    path = cfg.dataset.path
    if path and not Path(path).is_dir():
        written = (given.get("dataset") or {}).get("path", path)
        what = "is a file, not a dataset folder" if Path(path).exists() else "does not exist"
        raise ConfigError(f"{where}: dataset.path: {written!r} ({path}) {what}; set it to a dataset folder "
                          "(one with manifest.jsonl), relative to this file, or remove it to use [dataset] name")


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """The resolved configuration as plain data (for `config check` and RunStarted)."""
    out: dict[str, Any] = msgspec.to_builtins(cfg)
    return out


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(text: str, *, what: str = "duration") -> float:
    """'8h', '5m', '30s', '250ms' or plain seconds -> seconds. Raises ConfigError naming `what`."""
    match = _DURATION_RE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"{what}: {text!r} is not a positive duration; use e.g. 30s, 5m, 8h")
    return float(match.group(1)) * _UNIT_S[match.group(2)]
