"""[[models]]: one checkpoint with its identity, criteria and campaign resources."""

from __future__ import annotations

from orchestrator.base.identity import ModelIdentity
from orchestrator.config.common import Name, NonNegFloat, Section
from orchestrator.config.correctness import BaselineSide, CorrectnessCriteria

__all__ = ["ModelResources", "ModelConfig"]


class ModelResources(Section, frozen=True, kw_only=True):
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
    """A local Hugging Face tokenizer folder for AIPerf; empty: aqbench's own offline tokenizer. A snapshot folder of a
    Hugging Face hub cache (`.../models--ORG--NAME/snapshots/REV`, named by `refs/main`) is given to AIPerf by name,
    offline, which skips its tokenizer prefetch (0.5-1 s of each AIPerf start-up); any other folder by its path."""
    native_argv: list[str] = []
    """A native worker speaking TRTMC's JSON-lines protocol (with `audio`) for identity; empty: identity skipped."""
    correctness: CorrectnessCriteria
    resources: ModelResources = ModelResources()
    reference: BaselineSide | None = None
    server_args: list[str] = []
    """Arguments after `[server] argv` for this model's server only (same placeholders); never its reference's."""
