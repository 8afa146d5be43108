"""[dataset] and [workload]: what is asked, and the AIPerf run's shape."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from orchestrator.config.common import Arm, NonNegFloat, NonNegInt, PositiveFloat, PositiveInt, Section

__all__ = ["DatasetConfig", "WorkloadConfig"]


class DatasetConfig(Section, frozen=True, kw_only=True):
    """[dataset]: the audio-QA dataset every stage asks from."""

    name: str = "audioqa-v2"
    """A dataset shipped with aqbench, by name (`audioqa-v2`, `audioqa-v1`)."""
    path: str = ""
    """Or any dataset folder (with `manifest.jsonl`); it wins over `name`."""
    arms: Annotated[list[Arm], Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: ["audio", "silence", "transcript"]
    )
    """The arms the correctness stage asks: `audio` (the clip), `silence` (silence as long as the clip),
    `transcript` (the clip's transcript as text, speech items only)."""
    conditioning_items: NonNegInt = 0
    """The silence and transcript arms on this many items each, dealt across the kinds; 0: every item."""


class WorkloadConfig(Section, frozen=True, kw_only=True):
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
    keep_inputs: bool = False
    """Keep AIPerf's `inputs.json` (every payload, the audio in base64: tens of MB a run); by default it is
    removed once AIPerf has ended, as `inputs.jsonl` and the clip cache hold the same (`--keep-inputs`)."""
    timing: Literal["wait", "stock"] = "wait"
    """AIPerf's timing manager in concurrency mode: `wait` (aqbench's timing plugin waits for a freed slot) or
    `stock` (AIPerf 0.13.0's own loop, which spins a core until a request ends). Soaks and sweeps always wait."""
