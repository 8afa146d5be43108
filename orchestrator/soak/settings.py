"""What a soak runs with: the command line's options, the model it soaks and the settings they resolve to."""

from __future__ import annotations

import msgspec

from orchestrator.base.errors import ConfigError, UsageError
from orchestrator.config import Config, ModelConfig
from orchestrator.events import SoakLimits
from orchestrator.live.server import LivePage

__all__ = ["SoakOptions", "SoakSettings", "select_model", "resolve_settings"]


class SoakOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the command line chose beyond bench.toml (None: take bench.toml's value)."""

    duration_s: float | None = None
    window_s: float | None = None
    request_rate: float | None = None
    concurrency: int | None = None
    model: str = ""
    argv: list[str] = []
    # Any inconclusive verdict exits 1 as a failed one would.
    strict: bool = False
    # --serve: the live page, listening since before the run (None: no page).
    serve: LivePage | None = None
    # --no-stop-early: run the whole duration even once a look has decided a FAIL (orchestrator/soak/early_stop.py).
    stop_early: bool = True






def select_model(cfg: Config, name: str) -> ModelConfig:
    if not cfg.models:
        raise UsageError(f"{cfg.source}: no [[models]] configured; a soak needs one")
    if not name:
        return cfg.models[0]
    for m in cfg.models:
        if m.name == name:
            return m
    raise UsageError(f"--model {name}: not configured in {cfg.source}; configured models: "
                     f"{', '.join(m.name for m in cfg.models)}")


class SoakSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The soak as it runs: bench.toml's [soak] and [workload] with the command line's choices applied."""

    duration_s: float
    window_s: float
    checkpoint_every_s: float
    request_rate: float | None
    concurrency: int | None
    warmup_requests: int
    arms: list[str]
    limits: SoakLimits
    # When the load moves to a fresh AIPerf process (orchestrator/soak/handover_cue.py); 0: never by that cue.
    handover_mib: float = 0.0
    handover_every_s: float = 0.0
    # A decisive FAIL at a window's close ends the soak (orchestrator/soak/early_stop.py).
    stop_early: bool = True


def resolve_settings(cfg: Config, opts: SoakOptions) -> SoakSettings:
    """The soak's settings; ConfigError or UsageError when the choices contradict each other."""
    s, w = cfg.soak, cfg.workload
    duration = opts.duration_s or s.duration_s
    window = opts.window_s or s.window_s
    if window > duration:
        raise ConfigError(f"--window {window:g} s is longer than --duration {duration:g} s")
    if opts.request_rate is not None and opts.concurrency is not None:
        raise UsageError("pass --rate or --concurrency, not both")
    rate, conc = opts.request_rate, opts.concurrency
    if rate is None and conc is None:
        rate, conc = w.request_rate, w.concurrency
    return SoakSettings(duration_s=duration, window_s=window, checkpoint_every_s=s.checkpoint_every_s,
                     request_rate=rate, concurrency=None if rate is not None else conc,
                     warmup_requests=w.warmup_requests, arms=list(w.arms), limits=SoakLimits.from_config(s),
                        handover_mib=s.aiperf_handover_mib, handover_every_s=s.aiperf_handover_every_s,
                        stop_early=opts.stop_early)
