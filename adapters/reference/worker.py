"""The native worker: TRTMC's JSON-lines worker protocol (version 2) over stdin/stdout, plus audio.
One request at a time, in order; the same `Engine.answer` as the HTTP server, so answers are identical.
stdout carries protocol lines only; anything else goes to stderr."""

from __future__ import annotations

import base64
import binascii
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Literal, NotRequired, TypedDict

from adapters.media import AudioDecodeError, DecodedAudio, decode_audio
from adapters.reference.asr import COMPUTE_TYPES
from adapters.reference.engine import ENGINE_NAME, Engine
from adapters.reference.heap import warm_up_from_env

__all__ = ["PROTOCOL_VERSION", "Reply", "ReplyError", "ReplyResult", "handle", "main", "run_worker"]

PROTOCOL_VERSION = 2


class _RequestError(Exception):
    def __init__(self, type_: str, message: str) -> None:
        super().__init__(message)
        self.type = type_


def _audio(spec: object) -> DecodedAudio | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise _RequestError("invalid_request_error", "audio must be {'path': ABS_PATH} or "
                            "{'data': BASE64, 'format': wav|mp3|flac|ogg}")
    if "path" in spec:
        path = Path(spec["path"])
        fmt = spec.get("format") or path.suffix.lstrip(".").lower()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise _RequestError("invalid_request_error", f"audio.path {str(path)!r}: {exc.strerror}") from None
    else:
        fmt = spec.get("format", "")
        try:
            data = base64.b64decode(spec.get("data", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _RequestError("invalid_request_error", f"audio.data is not valid base64: {exc}") from None
    try:
        return decode_audio(data, fmt)
    except AudioDecodeError as exc:
        raise _RequestError("invalid_audio", str(exc)) from None


class ReplyError(TypedDict):
    type: str
    message: str


class ReplyResult(TypedDict):
    """A generate's answer, with TRTMC's worker's timing fields (the split ones unknown here)."""

    text: str
    completion_tokens: int
    setup_ms: None
    prefill_ms: None
    decode_ms: None
    model_call_ms: float
    timing_scope: Literal["public_task_call_wall"]


class Reply(TypedDict):
    """One reply line to a generate request."""

    id: object  # the request's own id, echoed whatever its type
    ok: bool
    result: NotRequired[ReplyResult]
    error: NotRequired[ReplyError]


# `msg` is a request line as the client wrote it (foreign JSON): each field is checked where it is read.
def handle(engine: Engine, msg: dict[str, Any]) -> Reply:
    """Answer one `generate` request line (already parsed)."""
    rid = msg.get("id")
    try:
        prompt = msg.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise _RequestError("invalid_request_error", "prompt must be a non-empty string")
        config = msg.get("config") or {}
        max_tokens = config.get("max_new_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise _RequestError("invalid_request_error", f"config.max_new_tokens must be a positive "
                                f"integer, got {max_tokens!r}")
        ans = engine.answer(_audio(msg.get("audio")), prompt.strip(), max_tokens)
    except _RequestError as exc:
        return {"id": rid, "ok": False, "error": {"type": exc.type, "message": str(exc)}}
    except Exception as exc:  # an engine failure answers this request; the worker lives on
        return {"id": rid, "ok": False, "error": {"type": "engine_error",
                                                  "message": f"{type(exc).__name__}: {exc}"}}
    return {"id": rid, "ok": True, "result": {
        "text": ans.text, "completion_tokens": ans.completion_tokens, "setup_ms": None,
        "prefill_ms": None, "decode_ms": None, "model_call_ms": round(ans.model_call_ms, 3),
        "timing_scope": "public_task_call_wall"}}


def run_worker(stdin: IO[str], stdout: IO[str], compute_type: str = "int8") -> int:
    """Serve requests until a shutdown op or end of input; returns the exit code. Blocks."""
    def send(obj: Mapping[str, object]) -> None:
        stdout.write(json.dumps(obj) + "\n")
        stdout.flush()

    t0 = time.perf_counter()
    try:
        engine = Engine(workers=1, compute_type=compute_type)
        loaded = time.perf_counter()
        # As the server does before its port opens: first-use memory and imports are taken before "ready",
        # so the first generate is timed and sized like the rest (unless AQBENCH_REFERENCE_WARM_UP=0).
        if warm_up_from_env(os.environ):
            engine.warm_up()
    except Exception as exc:
        send({"event": "failed", "error": f"{type(exc).__name__}: {exc}"})
        return 1
    send({"event": "ready", "protocol_version": PROTOCOL_VERSION,
          "capabilities": ["audio_text_to_text"], "engine": ENGINE_NAME,
          "speech_model": engine.speech_model, "load_ms": round((loaded - t0) * 1000, 1),
          "warm_up_ms": round((time.perf_counter() - loaded) * 1000, 1)})
    for line in stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            send({"id": None, "ok": False, "error": {"type": "protocol_error",
                                                     "message": f"bad request line: {exc}"}})
            continue
        op = msg.get("op")
        if op == "shutdown":
            send({"id": msg.get("id"), "ok": True, "result": {"status": "shutting_down"}})  # as TRTMC's worker
            return 0
        if op != "generate":
            send({"id": msg.get("id"), "ok": False, "error": {
                "type": "unsupported_op", "message": f"op {op!r} is not supported; ops: generate, shutdown"}})
            continue
        send(handle(engine, msg))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(argv or [])
    compute_type = "int8"
    if args[:1] == ["--compute-type"] and len(args) == 2 and args[1] in COMPUTE_TYPES:
        compute_type, args = args[1], []
    if args:
        print(f"python -m adapters.reference worker takes only --compute-type {{{','.join(COMPUTE_TYPES)}}}, "
              f"got {argv}", file=sys.stderr)
        return 2
    # Keep stray prints from libraries off the protocol stream.
    protocol_out = sys.stdout
    sys.stdout = sys.stderr
    return run_worker(sys.stdin, protocol_out, compute_type)
