"""bench.toml as typed msgspec Structs: `load_config()` validates and resolves paths.

Imports nothing from the project except errors and the model identity. Every error names the file, the key path and what
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
from orchestrator.identity import ModelIdentity

__all__ = [
    "Config",
    "RunConfig",
    "ServerConfig",
    "RestartPolicy",
    "ModelIdentity",
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
    "RESERVED_KEYS",
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
    """A bench.toml table; the string under each field is its meaning (`aqbench config reference` renders it)."""


class RunConfig(_Section, frozen=True, kw_only=True):
    """[run]: where runs go and what they are called."""

    output_dir: str = "runs"
    """The folder that holds the run folders: each run writes `<output_dir>/<name>-<UTC time>-<hex>/`."""
    name: RunName = ""
    """Run folders' name; empty: the command's. A soak adds `-soak` unless in it; campaign always uses `campaign`."""


class RestartPolicy(_Section, frozen=True, kw_only=True):
    """[server.restart]: what the supervisor does when the server exits or turns unhealthy."""

    policy: Literal["never", "on-failure"] = "on-failure"
    """`on-failure`: restart it, within the limits below; `never`: leave it down (the stage fails)."""
    max_restarts: NonNegInt = 3
    """At most this many restarts within `window_s`; at the next failure the supervisor gives up."""
    window_s: PositiveFloat = 600.0
    """The sliding window (seconds) over which restarts are counted."""
    backoff_s: NonNegFloat = 1.0
    """The pause before the first restart in the window; it doubles with each further one."""
    backoff_max_s: NonNegFloat = 30.0
    """The longest pause before a restart (at least `backoff_s`)."""


class ServerConfig(_Section, frozen=True, kw_only=True):
    """[server]: the server under test, started, probed, sampled and stopped by the supervisor."""

    kind: Literal["reference", "trtmc-server"] = "reference"
    """How the server is read (argv checks, readiness, log lines): `reference` (embedded) or `trtmc-server`."""
    argv: Annotated[list[str], Meta(min_length=1)] = msgspec.field(default_factory=lambda: [
        "{python}", "-m", "adapters.reference", "--host", "{host}", "--port", "{port}",
        "--model-name", "{model}", "--records", "{records}", "--replicas", "{replicas}",
    ])
    """The server's command line, a template over `{python}` `{host}` `{port}` `{records}` `{bundle}`
    `{model}` `{replicas}` `{run_dir}`. `{records}` is a per-model, per-start file under `<run>/server/`."""
    host: str = "127.0.0.1"
    """The address the server binds: loopback only (`127.x.x.x`, `localhost`, `::1`)."""
    port: Port | None = None
    """The port; unset: a free loopback port picked at start (0 is refused), kept across restarts."""
    replicas: PositiveInt = 1
    """Worker replicas, passed as `{replicas}`."""
    env: dict[str, str] = {}
    """Environment variables set for the server, over aqbench's own environment."""
    cwd: str = ""
    """The server's working folder; empty: aqbench's."""
    bundle: str = ""
    """The model bundle, passed as `{bundle}` (a `[[models]] bundle` wins); its sha256 goes in the result row."""
    startup_timeout_s: PositiveFloat = 300.0
    """How long to wait for readiness (`GET /health/ready` ready, then `/v1/models` listing the model)."""
    health_period_s: PositiveFloat = 1.0
    """Seconds between health probes once the server is ready."""
    health_timeout_s: PositiveFloat = 1.0
    """The time limit of one health probe."""
    health_failure_threshold: PositiveInt = 3
    """Failed probes in a row after which the server is unhealthy, stopped and restarted per `[server.restart]`."""
    stop_signal: Literal["SIGINT", "SIGTERM"] = "SIGINT"
    """The signal sent to the server's process group to stop it."""
    stop_grace_s: NonNegFloat = 30.0
    """Seconds from `stop_signal` to SIGKILL of the group."""
    sample_period_s: PositiveFloat = 1.0
    """Seconds between resource samples of the server's process tree (memory, CPU, threads, files, GPU memory)."""
    restart: RestartPolicy = RestartPolicy()


class NoninferiorityGate(_Section, frozen=True, kw_only=True):
    """A margin as the owners write one (`gate`, `quantized_gate`, `sampled_gate` in TRTMC's tasks.yaml)."""

    margin: NonNegFloat = 0.0
    """The margin in points of the benchmark's score."""
    relative_margin: NonNegFloat = 0.0
    """The margin as a fraction of the reference score; the larger of the two margins applies."""


class NoninferiorityCriteria(_Section, frozen=True, kw_only=True):
    """[models.correctness.noninferiority]: paired non-inferiority of the model against [models.reference].

    `margin`/`relative_margin` is the gate; `quantized_gate` replaces it for a quantized candidate and
    `sampled_gate` (first) for a sampling one, as the owners choose. With `source` (a TRTMC checkout,
    at `revision` when set) the gates come from its apps/aiperf_qual files instead, for `benchmark`.
    """

    margin: NonNegFloat = 0.0
    """Points: pass when the one-sided 95% upper bound of R (reference score minus model's) is below it."""
    relative_margin: NonNegFloat = 0.0
    """The margin as a fraction of the reference score; the larger of the two margins applies."""
    min_native: NonNegFloat | None = None
    """Below this reference score (points) the benchmark does not discriminate: the outcome is not comparable."""
    quantized_gate: NoninferiorityGate | None = None
    """The gate for a quantized `precision` (int8, fp8, ...) instead of `margin`."""
    sampled_gate: NoninferiorityGate | None = None
    """The gate for a sampling model (`deterministic = false`), before `quantized_gate`."""
    arms: list[Arm] = []
    """The arms whose (item, arm) problems are paired; empty: every arm of `[dataset] arms`."""
    source: str = ""
    """A TRTMC checkout whose apps/aiperf_qual files give the gates (set no margins), as `qualify --trtmc`."""
    revision: str = ""
    """The git revision to read `source` at; empty: its working tree."""
    benchmark: str = ""
    """The Task benchmark in the owners' files that this workload is; empty: the dataset's name."""
    seeds: PositiveInt = 3
    """Answers per problem and side when the model samples (the owners take three seeds)."""


class CorrectnessCriteria(_Section, frozen=True, kw_only=True):
    """[models.correctness]: the family's own gates, applied unchanged.

    `min_pass_rate` is the absolute gate (correctness stage, under load, soak windows); `noninferiority`
    judges the model against `[models.reference]`. At least one of them is set.
    """

    scorer: Literal["dataset", "exact", "choice", "numeric"] = "dataset"
    """`dataset`: each item by its manifest rule; `exact`, `choice` or `numeric`: every item by that rule."""
    min_pass_rate: Fraction | None = None
    """The share of correct answers on `arm` the model needs, compared exactly (0.9 is nine tenths)."""
    min_pass_rate_by_kind: dict[str, Fraction] = {}
    """The same per item kind (`{ count = 1.0 }`), on `arm`; needs `min_pass_rate` beside it."""
    arm: Arm = "audio"
    """The arm the pass-rate gates are applied on."""
    deterministic: bool = True
    """`true`: answers under load must equal the correctness stage's; `false`: the model samples (non-inferiority
    asks `seeds` times, `compare` judges correctness by `correctness_tolerance`)."""
    noninferiority: NoninferiorityCriteria | None = None


class ReferenceSide(_Section, frozen=True, kw_only=True):
    """[models.reference]: what a non-inferiority gate compares against, run alone after the model; one of argv, native_argv."""

    argv: list[str] = []
    """The reference's own server (placeholders as `[server] argv`; one replica per request in flight)."""
    native_argv: list[str] = []
    """Or a long-lived worker speaking TRTMC's JSON-lines worker protocol with an `audio` field."""
    precision: str = ""
    """What the reference computes at (for the result row)."""
    request_timeout_s: PositiveFloat | None = None
    """One reference request's limit; unset: `[workload] request_timeout_s` (full precision may be slower)."""
    concurrency: PositiveInt = 1
    """Requests in flight at once on its own server, started with as many replicas (the answers do not change)."""


class ModelResources(_Section, frozen=True, kw_only=True):
    """[models.resources]: what one model's campaign task holds on its node (Ray resources)."""

    gpus: NonNegFloat = 0.0
    """GPUs; the ones Ray assigns reach the server as `CUDA_VISIBLE_DEVICES`."""
    cpus: NonNegFloat = 1.0
    """CPUs."""
    memory_gib: NonNegFloat = 0.0
    """Memory to reserve, GiB; 0 reserves none."""
    custom: dict[str, NonNegFloat] = {}
    """Custom cluster resources such as a GPU type label (`{ H100 = 1 }`); the task waits for a node with all."""


class ModelConfig(ModelIdentity, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """[[models]]: one checkpoint to qualify, with its identity and its correctness criteria."""

    name: Name
    """The served model name (the `model` of every request); unique."""
    family: str
    """The model family."""
    checkpoint: str
    """The checkpoint's Hugging Face id (the inventory and the ledger join on it)."""
    bundle: str = ""
    """The model's bundle (overrides `[server] bundle`)."""
    tokenizer: str = ""
    """A local Hugging Face tokenizer folder for AIPerf; empty: aqbench's own offline tokenizer."""
    native_argv: list[str] = []
    """A native worker speaking TRTMC's JSON-lines protocol (with `audio`) for identity; empty: identity skipped."""
    correctness: CorrectnessCriteria
    resources: ModelResources = ModelResources()
    reference: ReferenceSide | None = None
    server_args: list[str] = []
    """Arguments after `[server] argv` for this model's server only (same placeholders); never its reference's."""


class DatasetConfig(_Section, frozen=True, kw_only=True):
    """[dataset]: the audio-QA dataset every stage asks from."""

    name: str = "audioqa-v2"
    """A dataset shipped with aqbench, by name (`audioqa-v2`, `audioqa-v1`)."""
    path: str = ""
    """Or any dataset folder (with `manifest.jsonl`); it wins over `name`."""
    arms: Annotated[list[Arm], Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: ["audio", "silence", "transcript"]
    )
    """The arms the correctness stage asks: `audio`, `silence` (as long as the clip), `transcript` (speech items)."""
    conditioning_items: NonNegInt = 0
    """The silence and transcript arms on this many items each, dealt across the kinds; 0: every item."""


class WorkloadConfig(_Section, frozen=True, kw_only=True):
    """[workload]: the AIPerf run, and the request shape on every path. Exactly one of `concurrency` and
    `request_rate`."""

    warmup_requests: NonNegInt = 4
    """AIPerf's warmup requests (accounted apart from profiling)."""
    requests: PositiveInt = 40
    """AIPerf's profiling requests."""
    concurrency: PositiveInt | None = 2
    """Closed loop: requests in flight at once; left out when `request_rate` is set."""
    request_rate: PositiveFloat | None = None
    """Open loop: requests per second, instead of `concurrency`."""
    arrival_pattern: Literal["constant", "poisson"] = "constant"
    """How open-loop arrivals are spaced."""
    streaming: bool = False
    """Ask for streamed answers (SSE)."""
    request_timeout_s: PositiveFloat = 60.0
    """The limit of one request, for AIPerf and for aqbench's own requests."""
    max_tokens: PositiveInt | None = None
    """The answer length limit sent on every path (probe, correctness, native, AIPerf); unset: none sent."""
    arms: Annotated[list[Arm], Meta(min_length=1)] = msgspec.field(default_factory=lambda: ["audio"])
    """The arms AIPerf replays."""
    deadline_s: PositiveFloat = 600.0
    """AIPerf's wall-clock limit."""
    stop_grace_s: NonNegFloat = 10.0
    """Seconds from SIGINT to SIGKILL when AIPerf is stopped."""


class SoakConfig(_Section, frozen=True, kw_only=True):
    """[soak]: the soak's shape and the limits its drift, leak and error verdicts apply."""

    duration_s: PositiveFloat = 8 * 3600.0
    """Total soak time (`--duration` overrides it)."""
    window_s: PositiveFloat = 300.0
    """Length of one window (`--window` overrides it)."""
    warmup_windows: NonNegInt = 1
    """First windows left out of the trend and error-rate verdicts."""
    checkpoint_every_s: PositiveFloat = 1800.0
    """How often verdicts are journaled and `soak.*` rewritten while the soak runs."""
    rss_limit_mib_per_h: NonNegFloat = 8.0
    """The memory trend limit (server, aqbench itself, GPU), MiB per hour."""
    p99_latency_limit_pct_per_h: NonNegFloat = 10.0
    """The latency drift limit (`latency_drift`, `server_p99_latency`), % of the baseline per hour."""
    max_error_rate: Fraction = 0.001
    """The largest share of failed requests over the windows after warmup."""
    min_trend_windows: Annotated[int, Meta(ge=3)] = 6
    """Judged windows (after warmup) a trend verdict needs; fewer: inconclusive."""
    min_trend_span_s: NonNegFloat = 600.0
    """Time from the first to the last judged window a trend verdict needs; shorter: inconclusive."""
    trend_confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.95
    """Two-sided confidence level of a trend's slope interval."""
    rss_growth_limit_mib: NonNegFloat = 64.0
    """Memory growth over the soak that fails (median of the last third of the windows minus the first third's)."""
    latency_baseline_windows: PositiveInt = 3
    """Judged windows whose per-item medians are each item's latency baseline."""
    max_window_gap_s: NonNegFloat = 1.0
    """The longest time without load allowed between two consecutive windows."""
    max_gap_fraction: Fraction = 0.01
    """The share of the soak all gaps together may take."""


class InventoryConfig(_Section, frozen=True, kw_only=True):
    """[inventory]: what `aqbench inventory` audits beyond what the TRTMC checkout shows."""

    candidates: list[str] = []
    """Always audited, by Hugging Face id or profile name (the shipped bench.toml lists the owners' six)."""


# Variables whose values `aqbench publish` keeps: aqbench's own AIPerf settings, which reproduce a run.
PUBLISH_ALLOWED_ENV = ("AIPERF_RECORD_EXPORT_BATCH_SIZE", "AIPERF_METRICS_EXPORT_FLUSH_INTERVAL")
PlaceholderName = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9-]*$")]


class PublishConfig(_Section, frozen=True, kw_only=True):
    """[publish]: what `aqbench publish` replaces beyond its built-in roots, and which variables it keeps."""

    roots: dict[PlaceholderName, str] = {}
    """More folders to write as placeholders: `models = "/models"` writes `<models>/...`."""
    names: list[Annotated[str, Meta(min_length=2)]] = []
    """More host, user or project names to hide as `<name>`."""
    allowed_env: list[str] = msgspec.field(default_factory=lambda: list(PUBLISH_ALLOWED_ENV))
    """Environment variables whose values may be published; every other value becomes `<env>`."""


class CompareConfig(_Section, frozen=True, kw_only=True):
    """[compare]: when `aqbench compare` calls a change real. A figure is `unchanged` when its interval lies
    within the tolerance, `regressed` or `improved` when wholly beyond it, else `inconclusive`."""

    confidence: Annotated[float, Meta(ge=0.5, lt=1.0)] = 0.90
    """Two-sided level of every interval (at 0.90 each direction errs at most 5 %)."""
    latency_tolerance: NonNegFloat = 0.05
    """Relative: a latency quantile within 5 % is unchanged."""
    throughput_tolerance: NonNegFloat = 0.05
    """Relative, on requests completed per second (the median of 20 slices of the profiling span)."""
    error_rate_tolerance: Fraction = 0.01
    """Absolute fraction of requests, for all causes together and for each cause."""
    correctness_tolerance: Fraction = 0.02
    """Absolute fraction of items, on pass rates, audio lift and incomplete answers of sampling models only: a
    deterministic model regresses on any newly wrong item, and on any item whose completeness changed."""
    resamples: Annotated[int, Meta(ge=200)] = 2000
    """Bootstrap resamples per interval."""
    seed: NonNegInt = 0
    """The bootstrap's seed (the same runs always compare the same)."""


class CampaignConfig(_Section, frozen=True, kw_only=True):
    """[campaign]: `aqbench campaign` on Ray: retries after a lost node, parallelism, what comes back."""

    max_retries: NonNegInt = 2
    """Retries of a model whose node (or worker) was lost; a failed stage is a verdict, never retried."""
    max_parallel: NonNegInt = 0
    """Models at once; 0: as the cluster's free resources allow (`--max-parallel` overrides it)."""
    stop_grace_s: PositiveFloat = 120.0
    """How long a stopped campaign waits for its tasks before force-cancelling them."""
    bring_back_mib: NonNegFloat = 64.0
    """A run-folder file larger than this stays on its node and is listed in the campaign report."""


# Config fields that are aqbench's bookkeeping, not keys: bench.toml may not set them.
RESERVED_KEYS = ("source", "sha256")


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
    """The config file's absolute path."""
    sha256: str = ""
    """The config file's sha256."""


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
    workload = data.get("workload")
    if isinstance(workload, dict) and "request_rate" in workload and "concurrency" not in workload:
        # An open loop: the closed loop's default concurrency gives way (TOML cannot write "unset").
        data = {**data, "workload": {**workload, "concurrency": None}}
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
    for reserved in RESERVED_KEYS:
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
    # Each model's name first, as bench.toml writes it (ModelIdentity, its base, declares the fields before it).
    out["models"] = [{"name": m["name"], **m} for m in out["models"]]
    return out


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(text: str, *, what: str = "duration") -> float:
    """'8h', '5m', '30s', '250ms' or plain seconds -> seconds. Raises ConfigError naming `what`."""
    match = _DURATION_RE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"{what}: {text!r} is not a positive duration; use e.g. 30s, 5m, 8h")
    return float(match.group(1)) * _UNIT_S[match.group(2)]
