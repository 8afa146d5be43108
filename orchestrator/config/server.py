"""[run] and [server]: where runs go, and the server under test with its restart policy."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from orchestrator.config.common import NonNegFloat, NonNegInt, Port, PositiveFloat, PositiveInt, RunName, Section

__all__ = ["RunConfig", "RestartPolicy", "ServerConfig"]


class RunConfig(Section, frozen=True, kw_only=True):
    """[run]: where runs go and what they are called."""

    output_dir: str = "runs"
    """The folder that holds the run folders: each run writes `<output_dir>/<name>-<UTC time>-<hex>/`."""
    name: RunName = ""
    """Run folders' name; empty: the command's. A soak adds `-soak` unless in it; campaign always uses `campaign`."""
    clip_cache: str = ""
    """The folder holding each clip as sent once per content (`<sha256>.wav`), shared by runs; empty:
    `<output_dir>-clips` beside the output folder. Runs name their clips in `clips.jsonl`; `aqbench runs --prune` drops unnamed ones."""


class RestartPolicy(Section, frozen=True, kw_only=True):
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


class ServerConfig(Section, frozen=True, kw_only=True):
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
