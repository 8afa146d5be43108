"""The native side of identity checks: a long-lived worker speaking TRTMC's native JSON-lines worker
protocol (a `ready` line, then `generate` requests and their answers) extended with an `audio` field.
One request at a time, in its own session."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import anyio
import msgspec
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from adapters.server.group import stop_group
from adapters.server.subreaper import spawned_here
from orchestrator.base.errors import ServerError

__all__ = ["NativeWorker", "NativeReply"]

# The worker's lines (ready, replies) are foreign JSON objects whose fields vary by worker: kept as dicts of
# anything and each field checked where it is read.
_Line = dict[str, Any]


class _AudioPath(TypedDict):
    path: str


class _Generate(TypedDict):
    """The one request aqbench writes to a worker."""

    id: str
    op: Literal["generate"]
    prompt: str
    config: dict[str, object]  # passed through to the worker's model as given
    audio: NotRequired[_AudioPath]

_MAX_LINE = 16 * 1024 * 1024
# Native Task ids that take audio and a text question (TRTMC's Task SDK names). A worker that advertises
# capabilities but none of these (TRTMC's text worker: ["text_generation"]) would drop the audio field
# silently and answer from the text alone.
AUDIO_QA_CAPABILITIES = frozenset({"audio_text_to_text", "image_audio_text_to_text", "audio_video_text_to_text"})


class NativeReply(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    text: str | None
    model_call_ms: float | None = None
    timing_scope: str = ""
    error: str = ""
    # The worker's own count of the answer's tokens, and the id this client gave the request.
    completion_tokens: int | None = None
    request_id: str = ""


class NativeWorker:
    """`async with NativeWorker(argv, log_path=...) as w: reply = await w.generate(question, audio_path)`.

    Entering waits for the worker's `ready` line (or raises ServerError with what it said); leaving sends
    `shutdown`, waits `stop_grace_s`, then kills its process group. Cancellation still stops it.
    """

    def __init__(self, argv: list[str], *, log_path: Path, env: dict[str, str] | None = None,
                 startup_timeout_s: float = 120.0, request_timeout_s: float = 120.0, stop_grace_s: float = 5.0) -> None:
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.startup_timeout_s = startup_timeout_s
        self.request_timeout_s = request_timeout_s
        self.stop_grace_s = stop_grace_s
        self.ready: _Line = {}
        self._proc: Process | None = None
        self._out: BufferedByteReceiveStream | None = None
        self._owned = ExitStack()  # holds the worker's spawned_here mark until it is reaped
        self._next = 0

    async def __aenter__(self) -> NativeWorker:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        env = {**os.environ, **(self.env or {})}
        try:
            self._proc = await anyio.open_process(self.argv, stderr=self._log, env=env, start_new_session=True)
        except OSError as exc:
            self._log.close()
            raise ServerError(f"native worker {self.argv[0]!r} could not start: {exc.strerror}; "
                              f"check native_argv in bench.toml") from None
        # Ours until reaped: a server's orphan sweep must not take it for a server's orphan.
        self._owned.enter_context(spawned_here(self._proc.pid))
        assert self._proc.stdout is not None
        self._out = BufferedByteReceiveStream(self._proc.stdout)
        try:
            with anyio.fail_after(self.startup_timeout_s):
                first = await self._read()
        except TimeoutError:
            await self._stop()
            raise ServerError(f"native worker {self.argv} sent no ready line within {self.startup_timeout_s} s; "
                              f"its stderr is in {self.log_path}") from None
        except BaseException:
            await self._stop()
            raise
        if first.get("event") != "ready":
            await self._stop()
            raise ServerError(f"native worker {self.argv} did not become ready: {first}; stderr in {self.log_path}")
        self.ready = first
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    async def _read(self) -> _Line:
        assert self._out is not None
        try:
            line = await self._out.receive_until(b"\n", _MAX_LINE)
        except (anyio.IncompleteRead, anyio.EndOfStream):
            code = self._proc.returncode if self._proc else None
            raise ServerError(f"native worker {self.argv} closed its output (exit code {code}); "
                              f"stderr in {self.log_path}") from None
        try:
            return msgspec.json.decode(line, type=_Line)  # ValidationError is a DecodeError
        except msgspec.DecodeError:
            raise ServerError(f"native worker {self.argv} wrote a line that is not JSON: {line[:200]!r}") from None

    async def _send(self, message: _Generate) -> None:
        if self._proc is None or self._proc.stdin is None:
            raise ServerError(f"native worker {self.argv} is stopped")
        try:
            await self._proc.stdin.send(msgspec.json.encode(message) + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            # TRTMC's worker exits after a fatal runtime_error reply: say so, not a traceback.
            code = self._proc.returncode
            raise ServerError(f"native worker {self.argv} no longer reads requests (exit code {code}); "
                              f"stderr in {self.log_path}") from None

    def check_takes_audio(self) -> None:
        """Raise ServerError when the ready line advertises capabilities and none takes audio."""
        caps = self.ready.get("capabilities")
        if isinstance(caps, list) and not AUDIO_QA_CAPABILITIES.intersection(map(str, caps)):
            raise ServerError(
                f"native worker {self.argv} advertises capabilities {caps}, none of which takes audio and a "
                f"question ({', '.join(sorted(AUDIO_QA_CAPABILITIES))}); it would ignore the audio and answer "
                f"from the text, so its answers cannot stand for the native path of this workload")

    async def generate(self, prompt: str, audio_path: str | None, *, config: Mapping[str, object] | None = None,
                       request_id: str = "") -> NativeReply:
        """Ask one question (as `request_id`, else `native-<n>`); waits up to request_timeout_s. Protocol
        errors raise ServerError.

        The config mirrors what trtmc-server's chat route gives its worker (temperature 0 as the HTTP
        client sends, and the chat template), so both paths prompt the model the same way."""
        self._next += 1
        rid = request_id or f"native-{self._next}"
        msg: _Generate = {"id": rid, "op": "generate", "prompt": prompt,
                          "config": {"temperature": 0.0, "use_chat_template": True, **(config or {})}}
        if audio_path is not None:
            self.check_takes_audio()
            msg["audio"] = {"path": audio_path}
        await self._send(msg)
        try:
            with anyio.fail_after(self.request_timeout_s):
                answer = await self._read()
        except TimeoutError:
            raise ServerError(f"native worker gave no answer to {rid} within {self.request_timeout_s} s") from None
        if answer.get("id") != rid:
            raise ServerError(f"native worker answered {answer.get('id')!r} to request {rid!r}")
        if not answer.get("ok"):
            err = answer.get("error") or {}
            return NativeReply(ok=False, text=None, error=f"{err.get('type', 'error')}: {err.get('message', '')}",
                               request_id=rid)
        result = answer.get("result") or {}
        tokens = result.get("completion_tokens")
        return NativeReply(ok=True, text=result.get("text"), model_call_ms=result.get("model_call_ms"),
                           timing_scope=result.get("timing_scope", ""),
                           completion_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
                           request_id=rid)

    async def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        with anyio.CancelScope(shield=True):
            try:
                if proc.returncode is None and proc.stdin is not None:
                    with anyio.move_on_after(1):
                        await proc.stdin.send(b'{"id":"shutdown","op":"shutdown"}\n')
                    await proc.stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            with anyio.move_on_after(self.stop_grace_s):
                await proc.wait()
            await stop_group(proc, signal.SIGKILL, 0.0)
            await proc.aclose()
            self._owned.close()
            self._log.close()
