"""One attempt as a Ray streaming-generator task: runs the model on this node and yields its journal live."""

from __future__ import annotations

import concurrent.futures
import io
import socket
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import msgspec

from adapters.server.nvml import NvmlReader
from orchestrator.campaign.events import AnyTaskMessage, JournalChunk, KeptFile, TaskDone, TaskPlaced
from orchestrator.campaign.ports import AttemptSpec, ModelRunner, StopNotice
from orchestrator.events import GpuIdentity

if TYPE_CHECKING:  # the task imports Ray inside (it runs on a worker); the name is for the reader
    from ray.actor import ActorHandle

__all__ = ["run_attempt", "JournalFollower", "pack_folder"]

# How often the task looks for new journal lines and for a stop request; bounds the streaming lag.
_TICK_S = 0.05
_CHUNK_BYTES = 1 << 20


class JournalFollower:
    """Reads whole new lines of the one run journal that appears under `root` (`<root>/<run>/events.jsonl`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path: Path | None = None
        self._offset = 0
        self._partial = b""

    def read(self) -> bytes:
        """Complete lines written since the last call (b"" when none); never a torn line."""
        if self.path is None:
            found = sorted(self.root.glob("*/events.jsonl"))
            if not found:
                return b""
            self.path = found[0]
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read(_CHUNK_BYTES)
        self._offset += len(data)
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        return data[:cut]


def pack_folder(folder: Path, *, limit_bytes: int, skip: tuple[str, ...] = ("events.jsonl",)) -> tuple[bytes, list[KeptFile]]:
    """A gzipped tar of `folder` without `skip` names at its top; files over `limit_bytes` stay and are listed."""
    buf = io.BytesIO()
    kept: list[KeptFile] = []
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if not path.is_file() or (len(rel.parts) == 1 and rel.name in skip):
                continue
            size = path.stat().st_size
            if size > limit_bytes:
                kept.append(KeptFile(path=str(path), size_bytes=size))
                continue
            tar.add(path, arcname=str(rel), recursive=False)
    return buf.getvalue(), kept


# A streaming generator rather than an actor: each yielded message is owned by the driver, so lines arrive in
# order with Ray's backpressure, and a dead node surfaces as an error on the stream the driver already reads.
# The stop travels the other way through a small stop actor (cluster.py), so qualify can journal RunFinished.
def run_attempt(spec_bytes: bytes, runner: ModelRunner, stop_flag: ActorHandle) -> Iterator[bytes]:
    """The body of the Ray task: yields encoded TaskPlaced, JournalChunks as lines appear, then TaskDone.

    Blocks. Raises what the runner raised (after streaming every line it wrote).
    """
    import ray
    import ray.exceptions

    spec = msgspec.msgpack.decode(spec_bytes, type=AttemptSpec)
    encoder = msgspec.msgpack.Encoder()
    out = Path(spec.node_folder)
    out.mkdir(parents=True, exist_ok=True)
    cfg = spec.config
    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    if gpu_ids:  # Ray's assignment reaches the server's environment and, through it, the sampler's view
        env = {**cfg.server.env, "CUDA_VISIBLE_DEVICES": ",".join(gpu_ids)}
        cfg = msgspec.structs.replace(cfg, server=msgspec.structs.replace(cfg.server, env=env))
    cfg = msgspec.structs.replace(cfg, run=msgspec.structs.replace(cfg.run, output_dir=str(out), name=spec.model))
    ctx = ray.get_runtime_context()
    node_id = ctx.get_node_id()
    address = next((n.get("NodeManagerAddress", "") for n in ray.nodes() if n.get("NodeID") == node_id), "")
    placed: AnyTaskMessage = TaskPlaced(node_id=node_id, node_address=address,
                                        hostname=socket.gethostname(), gpu_ids=gpu_ids, run_folder=str(out),
                                        started_unix_ns=time.time_ns(), gpus=_identities(gpu_ids))
    yield encoder.encode(placed)
    follower = JournalFollower(out)
    notice = StopNotice()
    stop_ref = stop_flag.wait.remote()
    with anyio.from_thread.start_blocking_portal() as portal:
        scopes: list[anyio.CancelScope] = []

        async def body() -> int | None:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                return await runner(cfg, spec.model, notice)
            return None  # cancelled by a stop request

        future = portal.start_task_soon(body)
        stopping = False
        while True:
            done, _ = concurrent.futures.wait([future], timeout=_TICK_S)
            lines = follower.read()
            if lines:
                yield encoder.encode(JournalChunk(lines=lines, read_unix_ns=time.time_ns()))
            if done:
                break
            if not stopping and scopes and ray.wait([stop_ref], timeout=0)[0]:
                stopping = True
                try:
                    signum = int(ray.get(stop_ref))
                except ray.exceptions.RayError:
                    continue  # the stop flag itself is gone (its node died): no stop can come; run on
                notice.set(signum)
                portal.call(scopes[0].cancel)
        if not stopping:
            ray.cancel(stop_ref)  # release this attempt's wait() on the stop flag
        try:
            rc = future.result()
        finally:
            # Whatever the runner did, every line it wrote reaches the driver.
            while lines := follower.read():
                yield encoder.encode(JournalChunk(lines=lines, read_unix_ns=time.time_ns()))
    interrupted = rc is None
    exit_code = 128 + (notice.signum or 2) if rc is None else rc
    run_dir = follower.path.parent if follower.path else out
    folder_tar, kept = pack_folder(run_dir, limit_bytes=spec.bring_back_bytes)
    yield encoder.encode(TaskDone(exit_code=exit_code, interrupted=interrupted, folder_tar=folder_tar,
                                  kept_on_node=kept))


def _identities(gpu_ids: list[str]) -> list[GpuIdentity]:
    """The identity of each GPU Ray gave the task (Ray's ids are NVML's indexes); none without NVML. Blocks."""
    if not gpu_ids:
        return []
    reader = NvmlReader()
    try:
        reader.read(set())
        return [g for g in reader.identities if str(g.index) in gpu_ids]
    finally:
        reader.close()
