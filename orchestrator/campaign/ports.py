"""What the campaign driver needs from a cluster, and what a cluster task needs from the composition root.
Protocols and small value types only; the Ray adapter (adapters/ray/) implements `Cluster` and runs a
`ModelRunner` on a node. Adapters may import this module besides events, config, errors and ports."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

import msgspec

from orchestrator.campaign.events import AnyTaskMessage, AttemptEnd, NodeFacts
from orchestrator.config import Config, ModelResources

__all__ = ["AttemptSpec", "Delivery", "Cluster", "ModelRunner", "StopNotice", "SignumHolder"]


class AttemptSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt of one model: the resolved configuration, what to hold, and where on the node to run.

    `node_folder` is an absolute path used on whichever node the attempt lands (created there).
    """

    campaign_id: str
    model: str
    attempt: int
    config: Config
    resources: ModelResources
    node_folder: str
    bring_back_bytes: int


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """One thing the cluster says about an attempt: a message from its task, or how it ended without one.

    Exactly one of `message` and `ended` is set; `ended` comes with the reason and the node it ran on.
    """

    model: str
    attempt: int
    message: AnyTaskMessage | None = None
    ended: AttemptEnd | None = None
    reason: str = ""
    node_id: str = ""


class Cluster(Protocol):
    """A set of nodes that runs attempts and streams their messages back. Every method blocks."""

    address: str

    def nodes(self) -> list[NodeFacts]:
        """Every node the cluster knows, alive or dead."""
        ...

    def submit(self, spec: AttemptSpec) -> None:
        """Queue one attempt; it starts when a node has its resources."""
        ...

    def poll(self, timeout_s: float) -> list[Delivery]:
        """What arrived since the last poll, waiting up to `timeout_s` for the first delivery."""
        ...

    def running(self) -> int:
        """Attempts submitted whose stream has not ended."""
        ...

    def stop(self, signum: int) -> None:
        """Ask every running attempt to stop as if its own process got `signum`; returns at once."""
        ...

    def kill(self) -> None:
        """Force-cancel whatever still runs (after the stop grace ran out)."""
        ...

    def close(self) -> None:
        """Disconnect (and shut down a cluster this process started)."""
        ...


class SignumHolder(Protocol):
    signum: int | None


class StopNotice:
    """Carries the driver's stop signal into a running model: the runner attaches its interrupt record,
    and the cluster adapter calls `set` before it cancels the runner, so the run's journal names the signal."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._holders: list[SignumHolder] = []

    def attach(self, holder: SignumHolder) -> None:
        self._holders.append(holder)
        if self.signum is not None:
            holder.signum = self.signum

    def set(self, signum: int) -> None:
        self.signum = signum
        for holder in self._holders:
            holder.signum = signum


class ModelRunner(Protocol):
    """Qualifies one configured model in this process and returns qualify's exit code.

    Cancellation stops its server and load cleanly; the run folder is `cfg.run.output_dir/<one run>`.
    """

    def __call__(self, cfg: Config, model: str, stop: StopNotice) -> Awaitable[int]: ...
