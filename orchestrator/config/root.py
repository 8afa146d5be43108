"""The whole bench.toml: one field per table (a new table is a module here and a field below)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from orchestrator.config.campaign import CampaignConfig
from orchestrator.config.common import Section
from orchestrator.config.compare import CompareConfig
from orchestrator.config.inventory import InventoryConfig
from orchestrator.config.models import ModelConfig
from orchestrator.config.publish import PublishConfig
from orchestrator.config.server import RunConfig, ServerConfig
from orchestrator.config.soak import SoakConfig
from orchestrator.config.sweep import SloConfig, SweepConfig
from orchestrator.config.workload import DatasetConfig, WorkloadConfig

__all__ = ["RESERVED_KEYS", "Config"]


# Config fields that are aqbench's bookkeeping, not keys: bench.toml may not set them.
RESERVED_KEYS = ("source", "sha256")


class Config(Section, frozen=True, kw_only=True):
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
    slo: SloConfig = SloConfig()
    sweep: SweepConfig = SweepConfig()
    source: str = ""
    """The config file's absolute path."""
    sha256: str = ""
    """The config file's sha256."""
