"""[publish]: what `aqbench publish` hides and keeps."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from orchestrator.config.common import Section

__all__ = ["PUBLISH_ALLOWED_ENV", "PublishConfig"]


# Variables whose values `aqbench publish` keeps: aqbench's own AIPerf settings, which reproduce a run.
PUBLISH_ALLOWED_ENV = ("AIPERF_RECORD_EXPORT_BATCH_SIZE", "AIPERF_METRICS_EXPORT_FLUSH_INTERVAL")
PlaceholderName = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9-]*$")]


class PublishConfig(Section, frozen=True, kw_only=True):
    """[publish]: what `aqbench publish` replaces beyond its built-in roots, and which variables it keeps."""

    roots: dict[PlaceholderName, str] = {}
    """More folders to write as placeholders: `models = "/models"` writes `<models>/...`."""
    names: list[Annotated[str, Meta(min_length=2)]] = []
    """More host, user or project names to hide as `<name>`."""
    allowed_env: list[str] = msgspec.field(default_factory=lambda: list(PUBLISH_ALLOWED_ENV))
    """Environment variables whose values may be published; every other value becomes `<env>`."""
