"""Events of a run and its phases, and the diagnostics that explain a stop (Warned, Failed, ...)."""

from __future__ import annotations

from typing import Literal

from orchestrator.config import Config
from orchestrator.events.base import SCHEMA_VERSION, Event
from orchestrator.events.payloads import (
    HostFacts,
    NoticeContext,
)
from orchestrator.events.phases import PhaseDetail

__all__ = ["RunStarted", "RunFinished", "PhaseStarted", "PhaseFinished", "Warned", "Failed", "EventsDropped", "SubscriberFailed"]


# --------------------------------------------------------------------------------------------- run


class RunStarted(Event, frozen=True, kw_only=True):
    """First line of every journal: what ran, with which configuration and tools, where."""

    schema_version: int = SCHEMA_VERSION
    command: str = ""
    argv: list[str] = []
    config_path: str = ""
    config_sha256: str = ""
    config: Config | None = None
    tool_versions: dict[str, str] = {}
    host: HostFacts = HostFacts()
    run_dir: str = ""


class RunFinished(Event, frozen=True, kw_only=True):
    """Last line of a journal that was closed in order. Its absence means the run was interrupted."""

    status: Literal["ok", "failed", "interrupted", "error", "planned"] = "ok"
    exit_code: int = 0
    reason: str = ""
    counts: dict[str, int] = {}


class PhaseStarted(Event, frozen=True, kw_only=True):
    """A named stage began (e.g. `capability`, `correctness`, `aiperf`, `soak`); `detail` is its own Struct."""

    phase: str
    model: str = ""
    detail: PhaseDetail | None = None


class PhaseFinished(Event, frozen=True, kw_only=True):
    """A named stage ended; `outcome` is the stage's verdict word (`passed`, `failed`, `skipped`, ...)."""

    phase: str
    model: str = ""
    outcome: str = ""
    reason: str = ""
    detail: PhaseDetail | None = None


# ---------------------------------------------------------------------------------- diagnostics


class Warned(Event, frozen=True, kw_only=True):
    """Something the user should know that does not stop the run."""

    code: str
    message: str
    detail: NoticeContext = NoticeContext()


class Failed(Event, frozen=True, kw_only=True):
    """An error that stops a stage or the run; journaled before anything is torn down."""

    code: str
    message: str
    detail: NoticeContext = NoticeContext()


class EventsDropped(Event, frozen=True, kw_only=True):
    """A lossy subscriber dropped its oldest events; `dropped` is the total so far."""

    subscriber: str
    dropped: int


class SubscriberFailed(Event, frozen=True, kw_only=True):
    """A bus subscriber raised; `best_effort` subscribers fail alone, others cancel the run."""

    subscriber: str
    error: str
    best_effort: bool = False
