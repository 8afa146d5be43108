"""The campaign journal's events (`campaign.jsonl`) and what a task sends its driver, as tagged Structs.
Imports only the configuration and the journal's tag rule. Schema evolution as in orchestrator/events/: append
fields with defaults."""

from __future__ import annotations

from typing import Literal

import msgspec

from orchestrator.config import ModelResources
from orchestrator.events import GpuIdentity, snake_tag

__all__ = [
    "CAMPAIGN_SCHEMA_VERSION",
    "CampaignEvent",
    "NodeFacts",
    "KeptFile",
    "CampaignStarted",
    "ModelSubmitted",
    "AttemptPlaced",
    "AttemptEnded",
    "NodeLost",
    "ModelFinished",
    "CampaignFinished",
    "AnyCampaignEvent",
    "CAMPAIGN_EVENT_TYPES",
    "TaskPlaced",
    "JournalChunk",
    "TaskDone",
    "AnyTaskMessage",
    "AttemptEnd",
    "MODEL_STATUSES_FINAL",
]

CAMPAIGN_SCHEMA_VERSION = 1

# How an attempt ended: `finished` (qualify ran to its own verdict), `interrupted` (the driver stopped it),
# `node-lost` (its node or worker died: retried), `error` (the task itself raised: not retried).
AttemptEnd = Literal["finished", "interrupted", "node-lost", "error"]

# A model row is final once it has one of these; `--resume` skips such models.
MODEL_STATUSES_FINAL = ("unsupported", "blocked", "implemented", "family-validated", "aiperf-qualified", "failed")


class CampaignEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag=snake_tag):
    """Base of every campaign event; `unix_ns` is the driver's wall clock when it journaled the event."""

    unix_ns: int = 0


class NodeFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One cluster node as Ray described it when the campaign started."""

    node_id: str
    address: str
    hostname: str = ""
    alive: bool = True
    resources: dict[str, float] = {}


class KeptFile(msgspec.Struct, frozen=True, kw_only=True):
    """A run-folder file too large to bring back: it stays on its node at `path`."""

    path: str
    size_bytes: int


class CampaignStarted(CampaignEvent, frozen=True, kw_only=True):
    """First line of campaign.jsonl: what runs where, with which configuration."""

    schema_version: int = CAMPAIGN_SCHEMA_VERSION
    campaign_id: str
    argv: list[str] = []
    config_path: str = ""
    config_sha256: str = ""
    address: str = ""
    models: list[str] = []
    skipped: list[str] = []
    max_parallel: int = 0
    max_retries: int = 0
    nodes: list[NodeFacts] = []
    # Models --resume runs again although their row was final: its run key is not the current one (what changed).
    stale: dict[str, str] = {}


class ModelSubmitted(CampaignEvent, frozen=True, kw_only=True):
    """One attempt of one model handed to the cluster, with the resources it asked for."""

    model: str
    attempt: int
    resources: ModelResources = ModelResources()


class AttemptPlaced(CampaignEvent, frozen=True, kw_only=True):
    """The attempt started on a node; `gpu_ids` are the GPUs Ray gave it (CUDA_VISIBLE_DEVICES)."""

    model: str
    attempt: int
    node_id: str
    node_address: str = ""
    hostname: str = ""
    gpu_ids: list[str] = []
    run_folder: str = ""
    started_unix_ns: int = 0
    # The identity of each GPU in `gpu_ids`, as NVML named it on the node (empty without NVML).
    gpus: list[GpuIdentity] = []


class AttemptEnded(CampaignEvent, frozen=True, kw_only=True):
    """How one attempt ended, and on which node; `status` is qualify's when it finished."""

    model: str
    attempt: int
    node_id: str = ""
    ended: AttemptEnd
    reason: str = ""
    status: str = ""
    exit_code: int | None = None
    retry: bool = False
    # Streaming from the task: lines received and their lag (driver receipt minus the event's ts_ns), in ms.
    stream: dict[str, float] = {}
    # Servers the attempt's journal shows spawned and never exited when its stream broke (`pid N (incarnation K)`).
    servers_not_stopped: list[str] = []


class NodeLost(CampaignEvent, frozen=True, kw_only=True):
    """A node that Ray reports dead while the campaign ran."""

    node_id: str
    node_address: str = ""
    reason: str = ""


class ModelFinished(CampaignEvent, frozen=True, kw_only=True):
    """A model's final row: its status, the attempts it took and where its files are."""

    model: str
    status: str
    failed_stage: str = ""
    reason: str = ""
    attempts: int = 0
    node_id: str = ""
    reproduce: str = ""
    journal: str = ""
    run_folder: str = ""
    kept_on_node: list[KeptFile] = []


class CampaignFinished(CampaignEvent, frozen=True, kw_only=True):
    """Last line of a campaign closed in order; its absence means the driver died."""

    status: Literal["ok", "failed", "interrupted", "error"] = "ok"
    exit_code: int = 0
    reason: str = ""
    counts: dict[str, int] = {}


CAMPAIGN_EVENT_TYPES = (CampaignStarted, ModelSubmitted, AttemptPlaced, AttemptEnded, NodeLost, ModelFinished,
                        CampaignFinished)
AnyCampaignEvent = (CampaignStarted | ModelSubmitted | AttemptPlaced | AttemptEnded | NodeLost | ModelFinished
                    | CampaignFinished)


# ------------------------------------------------------------------------------ task -> driver messages


class _TaskMessage(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag=snake_tag):
    pass


class TaskPlaced(_TaskMessage, frozen=True, kw_only=True):
    """The task's first message: where it runs."""

    node_id: str
    node_address: str = ""
    hostname: str = ""
    gpu_ids: list[str] = []
    run_folder: str = ""
    started_unix_ns: int = 0
    gpus: list[GpuIdentity] = []


class JournalChunk(_TaskMessage, frozen=True, kw_only=True):
    """Whole journal lines (each ending in a newline) as the task's qualify wrote them."""

    lines: bytes
    read_unix_ns: int = 0


class TaskDone(_TaskMessage, frozen=True, kw_only=True):
    """The task's last message: qualify's exit code, the run folder packed, and what stayed on the node."""

    exit_code: int
    interrupted: bool = False
    folder_tar: bytes = b""
    kept_on_node: list[KeptFile] = []


AnyTaskMessage = TaskPlaced | JournalChunk | TaskDone
