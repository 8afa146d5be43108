"""The composition root's one job: the real adapters, bundled as the Toolkit the core is given.
Commands import this module inside their `run` (not at their top), so that `aqbench --help` and the
light commands do not load AIPerf's and the server's adapters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio

from adapters import aiperf as _aiperf
from adapters.server_kinds import server_parts
from adapters.trtmc.qual_files import MODELS_DIR, TASKS_FILE, parse_owner_files
from adapters.trtmc.records_tail import ServerRecordsTailer

# log_codecs lives apart (log_codecs.py: the ingest command imports it alone); wiring hands it on.
from orchestrator.commands.log_codecs import log_codecs
from orchestrator.config import Config, WorkloadConfig
from orchestrator.inventory.tree import open_checkout, read_checkout_files
from orchestrator.spine.ports import (
    AiperfFacts,
    AiperfInvocation,
    AiperfResult,
    ChatSession,
    EventBus,
    ExportLevel,
    HandoverControl,
    NativeSession,
    OwnerFiles,
    PhaseGates,
    PhaseLoad,
    Toolkit,
)

__all__ = ["real_toolkit", "log_codecs", "owner_files", "read_owner_files"]


class _Aiperf:
    """adapters.aiperf behind the AiperfTools port."""

    def check_install(self) -> AiperfFacts:
        return _aiperf.check_install()

    def ensure_tokenizer(self, configured: str = "") -> Path:
        return _aiperf.ensure_tokenizer(configured)

    def build_command(self, workload: WorkloadConfig, *, base_url: str, model: str, input_file: Path,
                      artifact_dir: Path, tokenizer: Path, executable: str = "", requests: int | None = None,
                      warmup: int | None = None, concurrency: int | None = None, request_rate: float | None = None,
                      tap_dir: Path | None = None, tmp_dir: Path | None = None,
                      worker_gc: bool = False, timing_wait: bool = False,
                      control: HandoverControl | None = None,
                      export_level: ExportLevel = "raw") -> AiperfInvocation:
        return _aiperf.build_command(workload, base_url=base_url, model=model, input_file=input_file,
                                     artifact_dir=artifact_dir, tokenizer=tokenizer, executable=executable,
                                     requests=requests, warmup=warmup, concurrency=concurrency,
                                     request_rate=request_rate, tap_dir=tap_dir, tmp_dir=tmp_dir,
                                     worker_gc=worker_gc, timing_wait=timing_wait, control=control,
                                     export_level=export_level)

    def handover_control(self, folder: Path, *, gated: bool) -> HandoverControl:
        return _aiperf.FileHandover(folder, gated=gated)

    def phase_gates(self, folder: Path, names: Sequence[str]) -> PhaseGates:
        return _aiperf.FileGates(folder, names)

    def phased_command(self, cmd: AiperfInvocation, loads: Sequence[PhaseLoad], folder: Path,
                       gates: PhaseGates | None = None) -> AiperfInvocation:
        assert isinstance(cmd, _aiperf.AiperfCommand)  # build_command's, as this toolkit built it
        return _aiperf.phased_command(cmd, loads, folder, env=gates.env() if gates is not None else None)

    async def run_aiperf(self, cmd: AiperfInvocation, bus: EventBus, *, window: str, deadline_s: float,
                         stop_grace_s: float, install: AiperfFacts | None = None,
                         on_exit: Callable[[], None] | None = None,
                         stop: anyio.Event | None = None,
                         phases: Mapping[str, str] | None = None,
                         gates: PhaseGates | None = None) -> AiperfResult:
        return await _aiperf.run_aiperf(cmd, bus, window=window, deadline_s=deadline_s, stop_grace_s=stop_grace_s,
                                        install=install, on_exit=on_exit, stop=stop, phases=phases, gates=gates)


def _chat_client(base_url: str, model: str, *, timeout_s: float = 60.0, max_tokens: int | None = None) -> ChatSession:
    # Imported at the first chat: adapters.chat loads aiohttp (about 0.2 CPU-s), which only qualify's stages
    # need; run-aiperf, sweep, ab and soak never chat (bench/overhead.py measures run-aiperf's own CPU).
    from adapters.chat import ChatClient

    return ChatClient(base_url, model, timeout_s=timeout_s, max_tokens=max_tokens)


def _native_worker(argv: list[str], *, log_path: Path, startup_timeout_s: float = 120.0,
                   request_timeout_s: float = 120.0) -> NativeSession:
    # Imported at the first worker, as _chat_client: the adapters.chat package loads aiohttp.
    from adapters.chat import NativeWorker

    return NativeWorker(argv, log_path=log_path, startup_timeout_s=startup_timeout_s,
                        request_timeout_s=request_timeout_s)


def real_toolkit() -> Toolkit:
    """The adapters a real run uses."""
    return Toolkit(server_parts=server_parts, records_tailer=ServerRecordsTailer, chat_client=_chat_client,
                   native_worker=_native_worker, aiperf=_Aiperf())


def read_owner_files(checkout: str | Path, profile: str, revision: str = "") -> OwnerFiles:
    """The owners' tasks.yaml and the profile's exceptions from a checkout, read as the inventory reads it:
    the working tree, `revision` through git, or a bare repository at its HEAD. The revision cited is the
    resolved commit, HEAD with `+worktree` for a working tree, or `unversioned` outside git. Raises
    InventoryError (folder, revision) or ConfigError (no tasks.yaml there, naming the revision). Blocks."""
    source = open_checkout(checkout, revision)
    profile_rel = f"{MODELS_DIR}/{profile}.yaml" if profile else ""
    found = read_checkout_files(source, [TASKS_FILE, *([profile_rel] if profile_rel else [])])
    if source.read_via == "git":
        cited = source.commit
        where = f"{source.root} at {source.commit[:12]}" + (f" ({revision})" if revision else " (HEAD of a bare repository)")
    else:
        cited = f"{source.commit}+worktree" if source.commit else "unversioned"
        where = f"{source.root} (working tree{f' on {source.commit[:12]}' if source.commit else ''})"
    return parse_owner_files(found.get(TASKS_FILE), found.get(profile_rel) if profile_rel else None, profile=profile,
                             revision=cited, where=where)


def owner_files(cfg: Config, trtmc: str = "", rev: str = "") -> dict[str, OwnerFiles]:
    """TRTMC's qualification files for each model judged by the owners' gates: every model with a reference
    when `trtmc` is given, else each whose noninferiority table names a `source`. Blocks (reads, git)."""
    out: dict[str, OwnerFiles] = {}
    for model in cfg.models:
        ni = model.correctness.noninferiority
        source = trtmc if model.reference is not None else ""
        source = source or (ni.source if ni is not None else "")
        if source:
            revision = rev if trtmc else (ni.revision if ni is not None else "")
            out[model.name] = read_owner_files(source, model.profile, revision)
    return out


