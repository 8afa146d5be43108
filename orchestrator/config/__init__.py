"""bench.toml as typed msgspec Structs, one module per table (or per use's tables), `root.Config` holding them
all: `load_config()` validates and resolves paths. A key's meaning is the string under its field (rendered by
`aqbench config reference`); every error names the file, the key path and what was expected."""

from __future__ import annotations

# The config package imports nothing from the project except base.errors and base.identity.
from orchestrator.base.identity import ModelIdentity
from orchestrator.config.campaign import CampaignConfig
from orchestrator.config.common import ARMS, PLACEHOLDERS
from orchestrator.config.compare import CompareConfig
from orchestrator.config.correctness import (
    BaselineSide,
    CorrectnessCriteria,
    NoninferiorityCriteria,
    NoninferiorityGate,
)
from orchestrator.config.duration import parse_duration
from orchestrator.config.inventory import InventoryConfig
from orchestrator.config.load import config_from_dict, config_to_dict, load_config
from orchestrator.config.models import ModelConfig, ModelResources
from orchestrator.config.publish import PUBLISH_ALLOWED_ENV, PublishConfig
from orchestrator.config.root import RESERVED_KEYS, Config
from orchestrator.config.server import RestartPolicy, RunConfig, ServerConfig
from orchestrator.config.soak import SoakConfig
from orchestrator.config.sweep import SloConfig, SweepConfig
from orchestrator.config.workload import DatasetConfig, WorkloadConfig

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
    "BaselineSide",
    "DatasetConfig",
    "WorkloadConfig",
    "SoakConfig",
    "SloConfig",
    "SweepConfig",
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
