"""The composition root's one job: the real adapters, bundled as the Toolkit the core is given.
Commands import this module inside their `run` (not at their top), so that `aqbench --help` and the
light commands do not load AIPerf's and the server's adapters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio

from adapters import aiperf as _aiperf
from adapters.server_kinds import server_parts
from adapters.trtmc.records_tail import ServerRecordsTailer
from orchestrator.config import WorkloadConfig
from orchestrator.spine.ports import (
    AiperfFacts,
    AiperfInvocation,
    AiperfResult,
    ChatSession,
    EventBus,
    ExportLevel,
    HandoverControl,
    NativeSession,
    PhaseGates,
    PhaseLoad,
    Toolkit,
)

# The log formats are wired in log_codecs.py, which only ingest imports: not here, where they cost run-aiperf's
# start 0.01-0.02 CPU-s (adapters.logs) for nothing.
__all__ = ["real_toolkit"]


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
