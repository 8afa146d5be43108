"""`RayCluster`: the campaign's Cluster port on Ray: connect or start, submit attempts, multiplex their streams."""

from __future__ import annotations

import os
import signal
from typing import Any

import msgspec
import ray
import ray.exceptions

from adapters.ray.task import run_attempt
from orchestrator.campaign.events import AnyTaskMessage, AttemptEnd, NodeFacts, TaskDone, TaskPlaced
from orchestrator.campaign.ports import AttemptSpec, Delivery, ModelRunner

__all__ = ["RayCluster"]

_HEAD = "node:__internal_head__"
_decode = msgspec.msgpack.Decoder(AnyTaskMessage).decode

# Errors that mean the attempt's node or worker went away (a fault, worth a retry elsewhere), as opposed
# to RayTaskError (the task's own code raised: a bug or a configuration error, not retried).
_LOST = (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError,
         ray.exceptions.OwnerDiedError, ray.exceptions.LocalRayletDiedError, ray.exceptions.RaySystemError,
         ray.exceptions.ActorDiedError, ray.exceptions.ObjectFetchTimedOutError)


@ray.remote(num_cpus=0)
class _StopFlag:
    """Set once by the driver; every task waits on it beside its work (no polling of the driver)."""

    def __init__(self) -> None:
        import asyncio

        self._event = asyncio.Event()
        self._signum = int(signal.SIGINT)

    async def wait(self) -> int:
        await self._event.wait()
        return self._signum

    async def set(self, signum: int) -> None:
        self._signum = signum
        self._event.set()


_remote_attempt = ray.remote(num_returns="streaming", max_retries=0)(run_attempt)


class _Attempt:
    def __init__(self, spec: AttemptSpec, stream: ray.ObjectRefGenerator) -> None:
        self.spec = spec
        self.stream = stream
        self.node_id = ""


# Starts a local Ray bound to 127.0.0.1 with no dashboard when given no address (and no RAY_ADDRESS);
# otherwise joins the cluster at that address. Never retries a task itself: the driver decides retries, so
# that every attempt is journaled with why it ended.
class RayCluster:
    """Cluster port on Ray. Blocks in every method (Ray's client API is blocking)."""

    def __init__(self, runner: ModelRunner, *, address: str | None = None, num_cpus: int | None = None,
                 num_gpus: int | None = None) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage reports leave the machine
        address = address or os.environ.get("RAY_ADDRESS") or None
        self.started_here = address is None
        if address is None:
            ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False,
                     dashboard_host="127.0.0.1", log_to_driver=False, configure_logging=False,
                     num_cpus=num_cpus or os.cpu_count() or 1, num_gpus=num_gpus)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        self.address = address or ray.get_runtime_context().gcs_address
        self._runner = runner
        # The stop flag lives on the head node (Ray's own head marker resource): losing a worker node
        # never loses it, and a campaign without a head has no cluster anyway.
        # Every running attempt holds one wait() call on it: room for far more than any campaign runs.
        self._stop = _StopFlag.options(  # type: ignore[attr-defined]
            resources={_HEAD: 0.001}, max_concurrency=100_000).remote()
        self._attempts: dict[Any, _Attempt] = {}  # by Ray's ObjectRefGenerator (Ray is untyped here)

    def nodes(self) -> list[NodeFacts]:
        return [NodeFacts(node_id=n["NodeID"], address=n.get("NodeManagerAddress", ""),
                          hostname=n.get("NodeManagerHostname", ""), alive=bool(n.get("Alive")),
                          resources={k: float(v) for k, v in n.get("Resources", {}).items()
                                     if not k.startswith("node:")})
                for n in ray.nodes()]

    def submit(self, spec: AttemptSpec) -> None:
        r = spec.resources
        options: dict[str, object] = {"num_cpus": r.cpus, "num_gpus": r.gpus, "resources": dict(r.custom)}
        if r.memory_gib > 0:
            options["memory"] = int(r.memory_gib * 2**30)
        stream = _remote_attempt.options(**options).remote(msgspec.msgpack.encode(spec), self._runner, self._stop)
        self._attempts[stream] = _Attempt(spec, stream)

    def running(self) -> int:
        return len(self._attempts)

    def poll(self, timeout_s: float) -> list[Delivery]:
        if not self._attempts:
            return []
        streams = list(self._attempts)
        ready, _ = ray.wait(streams, num_returns=len(streams), timeout=0)
        if not ready:
            ready, _ = ray.wait(streams, num_returns=1, timeout=timeout_s)
        out: list[Delivery] = []
        for stream in ready:
            out.extend(self._take(self._attempts[stream]))
        return out

    def _take(self, att: _Attempt) -> list[Delivery]:
        """Every message of this stream that is ready now; its end when the stream ended."""
        out: list[Delivery] = []
        spec = att.spec
        while True:
            try:
                ref = next(att.stream)
                message = _decode(ray.get(ref))
            except StopIteration:
                self._attempts.pop(att.stream, None)
                if not out or not isinstance(out[-1].message, TaskDone):
                    out.append(Delivery(model=spec.model, attempt=spec.attempt, ended="error", node_id=att.node_id,
                                        reason="the task's stream ended without its final message"))
                return out
            except ray.exceptions.TaskCancelledError as exc:
                return [*out, self._end(att, "interrupted", exc)]
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause if isinstance(exc.cause, BaseException) else exc
                lost = isinstance(cause, _LOST)
                return [*out, self._end(att, "node-lost" if lost else "error", cause)]
            except _LOST as exc:
                return [*out, self._end(att, "node-lost", exc)]
            if isinstance(message, TaskPlaced):
                att.node_id = message.node_id
            out.append(Delivery(model=spec.model, attempt=spec.attempt, message=message, node_id=att.node_id))
            if isinstance(message, TaskDone):
                # The generator returns right after TaskDone; drop it so poll() stops waiting on it.
                self._attempts.pop(att.stream, None)
                return out
            if not ray.wait([att.stream], timeout=0)[0]:
                return out

    def _end(self, att: _Attempt, ended: AttemptEnd, exc: BaseException) -> Delivery:
        self._attempts.pop(att.stream, None)
        text = str(exc).strip().splitlines()
        reason = f"{type(exc).__name__}: {text[0] if text else ''}"[:500]
        return Delivery(model=att.spec.model, attempt=att.spec.attempt, ended=ended, reason=reason,
                        node_id=att.node_id)

    def stop(self, signum: int) -> None:
        self._stop.set.remote(signum)

    def kill(self) -> None:
        for stream in list(self._attempts):
            ray.cancel(stream, force=True)

    def close(self) -> None:
        ray.shutdown()
