"""The reference server's HTTP routes (aiohttp): trtmc-server's contract plus audio content parts.
Owns admission (replicas, no queue), request ids, errors, records and drain; the engine runs in
worker threads through anyio so the event loop never blocks on decoding or answering."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypedDict

import anyio
import anyio.to_thread
from aiohttp import web
from aiohttp.typedefs import Handler

from adapters.media import AudioDecodeError, DecodedAudio, decode_audio
from adapters.reference.chat import REQUEST_ID_RE, ApiError, ChatRequest, parse_chat
from adapters.reference.engine import ENGINE_NAME, Engine, EngineAnswer
from adapters.reference.faults import WRONG_ANSWER, FaultSettings, FaultState, under_load
from adapters.reference.heap import HeapCounters
from adapters.trtmc.records import AudioInfo, RecordLine, RecordWriter

__all__ = ["ServerSettings", "ServerState", "build_app"]

CHAT_ROUTE = "/v1/chat/completions"
_DURATIONS_KEPT = 2048  # bounded window for the /metrics quantiles


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str
    port: int
    model_name: str
    replicas: int = 1
    records: Path | None = None
    max_body_bytes: int = 32 * 1024 * 1024
    request_timeout_s: float = 120.0
    max_audio_s: float = 60.0
    faults: FaultSettings = field(default_factory=FaultSettings)
    # trtmc-server answers finish_reason null and ends a stream without a finish chunk; this keeps that
    # by default and, when set, answers as OpenAI does ("stop"/"length" and a final chunk).
    openai_finish_reason: bool = False


@dataclass(slots=True)
class ServerState:
    """Mutable state, touched only on the event loop thread."""

    settings: ServerSettings
    engine: Engine
    records: RecordWriter
    faults: FaultState
    free_replicas: list[str]
    draining: bool = False
    dead_replicas: int = 0  # --fault-worker-crash-after: replicas that "exited" and never come back
    active: int = 0
    requests: Counter[tuple[str, int]] = field(default_factory=Counter)  # (route, status) -> count
    durations_ms: deque[float] = field(default_factory=lambda: deque(maxlen=_DURATIONS_KEPT))
    duration_sum_ms: float = 0.0
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    hang: asyncio.Event = field(default_factory=asyncio.Event)  # never set: hung handlers wait on it
    decode_limiter: anyio.CapacityLimiter | None = None
    engine_limiter: anyio.CapacityLimiter | None = None
    heap: HeapCounters = field(default_factory=HeapCounters)  # --malloc-trim-every, --tracemalloc-snapshots
    gpu_request: Callable[[], None] | None = None  # tells the GPU worker (adapters/reference/gpu.py) of a request

    def __post_init__(self) -> None:
        self.idle.set()
        n = len(self.free_replicas)
        self.decode_limiter = anyio.CapacityLimiter(n)
        self.engine_limiter = anyio.CapacityLimiter(n)


_STATE = web.AppKey("state", ServerState)


def _error_response(err: ApiError, request_id: str) -> web.Response:
    resp = web.json_response(err.body(), status=err.status)
    if request_id:
        resp.headers["x-request-id"] = request_id
    if err.status == 429:
        resp.headers["Retry-After"] = "1"
    return resp


@web.middleware
async def _request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Validate X-Request-ID (one header, trtmc-server's pattern), make one up if absent, echo it."""
    state = request.app[_STATE]
    if state.faults.hanging:
        await state.hang.wait()  # fault: stop answering everything, health included
    values = request.headers.getall("X-Request-ID", [])
    if len(values) > 1 or (values and not REQUEST_ID_RE.match(values[0])):
        generated = f"req-{uuid.uuid4().hex}"
        what = "repeated" if len(values) > 1 else f"{values[0]!r} does not match {REQUEST_ID_RE.pattern}"
        err = ApiError(400, "invalid_request", f"invalid X-Request-ID header: {what}", "X-Request-ID")
        if request.path == CHAT_ROUTE:
            state.records.write(RecordLine(
                request_id=generated, route=CHAT_ROUTE, model=None, replica=None, status=400,
                handler_ms=0.0, admission_ms=None, model_call_ms=None, error_code=err.code,
                start_unix_ns=time.time_ns(), end_unix_ns=time.time_ns()))
        return _error_response(err, generated)
    request_id = values[0] if values else f"req-{uuid.uuid4().hex}"
    request["request_id"] = request_id
    request["request_id_sent"] = bool(values)  # a made-up id is no key for --fault-latency-share
    resp = await handler(request)
    resp.headers.setdefault("x-request-id", request_id)
    return resp


async def _health_live(request: web.Request) -> web.Response:
    return web.json_response({"status": "live"})


async def _health_ready(request: web.Request) -> web.Response:
    state = request.app[_STATE]
    if state.draining:
        return web.json_response({"status": "not_ready", "degraded": False, "reason": "draining"},
                                 status=503)
    # As trtmc-server: a dead worker leaves the server up, degraded while another replica lives.
    if state.dead_replicas >= state.settings.replicas:
        return web.json_response({"status": "not_ready", "degraded": False, "reason": "every replica exited"},
                                 status=503)
    return web.json_response({"status": "ready", "degraded": state.dead_replicas > 0})


async def _models(request: web.Request) -> web.Response:
    state = request.app[_STATE]
    return web.json_response({"object": "list", "data": [{
        "id": state.settings.model_name, "object": "model", "created": 0, "owned_by": "aqbench",
        "capabilities": ["audio_text_to_text"],
        "engine": {"name": ENGINE_NAME, "speech_model": state.engine.speech_model,
                   "vad": "silero-vad (faster-whisper assets, ONNX)", "replicas": state.settings.replicas,
                   "answer_memo": state.engine.memo_size, "answer_memo_hits": state.engine.memo_hits},
        "trtmc": {"streaming": "buffered", "protocol_version": 2},
    }]})


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _metrics(request: web.Request) -> web.Response:
    state = request.app[_STATE]
    n = state.settings.replicas
    lines = [
        "# HELP aqbench_reference_ready 1 when the server admits requests.",
        "# TYPE aqbench_reference_ready gauge",
        f"aqbench_reference_ready {0 if state.draining else 1}",
        "# TYPE aqbench_reference_active_requests gauge",
        f"aqbench_reference_active_requests {state.active}",
        "# TYPE aqbench_reference_busy_replicas gauge",
        f"aqbench_reference_busy_replicas {n - len(state.free_replicas)}",
        "# TYPE aqbench_reference_replicas gauge",
        f"aqbench_reference_replicas {n}",
        "# TYPE aqbench_reference_requests_total counter",
    ]
    for (route, status), count in sorted(state.requests.items()):
        lines.append(f'aqbench_reference_requests_total{{route="{route}",status="{status}"}} {count}')
    window = list(state.durations_ms)
    lines.append("# HELP aqbench_reference_request_duration_ms Chat handler time (last "
                 f"{_DURATIONS_KEPT} requests for quantiles).")
    lines.append("# TYPE aqbench_reference_request_duration_ms summary")
    for q in (0.5, 0.9, 0.99):
        lines.append(f'aqbench_reference_request_duration_ms{{quantile="{q}"}} {_quantile(window, q)}')
    lines.append(f"aqbench_reference_request_duration_ms_sum {state.duration_sum_ms}")
    lines.append(f"aqbench_reference_request_duration_ms_count {sum(state.requests.values())}")
    lines += ["# HELP aqbench_reference_malloc_trims_total malloc_trim(0) calls (--malloc-trim-every).",
              "# TYPE aqbench_reference_malloc_trims_total counter",
              f"aqbench_reference_malloc_trims_total {state.heap.trims}",
              "# HELP aqbench_reference_malloc_trims_released_total Trims after which glibc returned memory.",
              "# TYPE aqbench_reference_malloc_trims_released_total counter",
              f"aqbench_reference_malloc_trims_released_total {state.heap.trims_released}",
              "# TYPE aqbench_reference_tracemalloc_snapshots_total counter",
              f"aqbench_reference_tracemalloc_snapshots_total {state.heap.snapshots}"]
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


def _finish_reason(ans: EngineAnswer, openai: bool) -> str | None:
    if not openai:
        return None  # as trtmc-server
    return "length" if ans.truncated else "stop"


class _Message(TypedDict):
    role: Literal["assistant"]
    content: str


class _Choice(TypedDict):
    index: int
    message: _Message
    finish_reason: str | None


class _Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class _Completion(TypedDict):
    """An OpenAI chat.completion body, as this server answers a non-streaming request."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[_Choice]
    usage: _Usage


def _answer_body(req: ChatRequest, ans: EngineAnswer, request_id: str, model: str, openai: bool) -> _Completion:
    return {
        "id": f"chatcmpl-{request_id}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ans.text},
                     "finish_reason": _finish_reason(ans, openai)}],
        "usage": {"prompt_tokens": 0, "completion_tokens": ans.completion_tokens,
                  "total_tokens": ans.completion_tokens},
    }


def _sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class _Outcome:
    """What the chat handler learned, for the record written when the response is finished."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.replica: str | None = None
        self.admission_ms: float | None = None
        self.model_call_ms: float | None = None
        self.roundtrip_ms: float | None = None
        self.tokens: int | None = None
        self.streaming = "none"
        self.audio: AudioInfo | None = None
        self.error_code: str | None = None
        self.fault_latency_ms = 0.0


async def _chat(request: web.Request) -> web.StreamResponse:
    state = request.app[_STATE]
    t0 = time.perf_counter()
    start_ns = time.time_ns()
    request_id = request["request_id"]
    out = _Outcome()
    status = 500
    state.active += 1
    state.idle.clear()
    try:
        try:
            resp = await _chat_inner(request, state, request_id, out)
            status = resp.status
        except ApiError as err:
            out.error_code = err.code
            resp = _error_response(err, request_id)
            status = err.status
            await resp.prepare(request)
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            status = 499  # the client went away; the record still says so
            out.error_code = "client_disconnected"
            raise
        return resp
    finally:
        handler_ms = (time.perf_counter() - t0) * 1000.0
        state.requests[(CHAT_ROUTE, status)] += 1
        state.durations_ms.append(handler_ms)
        state.duration_sum_ms += handler_ms
        state.records.write(RecordLine(
            request_id=request_id, route=CHAT_ROUTE, model=out.model, replica=out.replica,
            status=status, handler_ms=round(handler_ms, 3), admission_ms=out.admission_ms,
            model_call_ms=out.model_call_ms, worker_roundtrip_ms=out.roundtrip_ms,
            completion_tokens=out.tokens, streaming=out.streaming, audio=out.audio,
            error_code=out.error_code, start_unix_ns=start_ns, end_unix_ns=time.time_ns(),
            fault_latency_ms=out.fault_latency_ms))
        state.active -= 1
        if state.active == 0:
            state.idle.set()


async def _chat_inner(request: web.Request, state: ServerState, request_id: str,
                      out: _Outcome) -> web.StreamResponse:
    s = state.settings
    if state.draining:
        raise ApiError(503, "server_draining", "the server is shutting down and admits no new "
                       "requests", error_type="server_error")
    fault = state.faults.admit()
    if state.gpu_request is not None:
        state.gpu_request()
    if fault == "crash":
        os._exit(70)  # fault: die mid-request, like a crashed process (no cleanup, no record)
    if fault == "hang":
        await state.hang.wait()
    req = parse_chat(await _read_body(request, s.max_body_bytes))
    out.model = req.model
    out.streaming = "buffered" if req.stream else "none"
    if req.model != s.model_name:
        raise ApiError(404, "model_not_found", f"model {req.model!r} is not served here; "
                       f"available: {s.model_name!r}", "model")
    if fault == "error":
        raise ApiError(500, "engine_error", "injected fault: --fault-error-rate", error_type="server_error")
    audio = await _decode_request_audio(state, req, out)
    replica = _take_replica(state, fault, out)
    ans = await _call_engine(state, replica, audio, req, out, request_id if request["request_id_sent"] else None)
    headers = {"x-request-id": request_id, "Server-Timing": f"model;dur={ans.model_call_ms:.3f}"}
    if not req.stream:
        resp: web.StreamResponse = web.json_response(_answer_body(req, ans, request_id, s.model_name, s.openai_finish_reason),
                                 headers=headers)
        await resp.prepare(request)
        await resp.write_eof()
        return resp
    return await _stream_answer(request, req, ans, request_id, headers, s)


async def _read_body(request: web.Request, max_body_bytes: int) -> bytes:
    """The request body, refused (413) as soon as it is known to exceed `max_body_bytes`."""
    if request.content_length is not None and request.content_length > max_body_bytes:
        raise ApiError(413, "content_too_large", f"request body of {request.content_length} bytes "
                       f"exceeds --max-body-bytes {max_body_bytes}")
    _check_content_type(request)
    raw = bytearray()
    async for chunk in request.content.iter_chunked(1 << 16):
        raw.extend(chunk)
        if len(raw) > max_body_bytes:
            raise ApiError(413, "content_too_large", f"request body exceeds --max-body-bytes "
                           f"{max_body_bytes}")
    return bytes(raw)


async def _decode_request_audio(state: ServerState, req: ChatRequest, out: _Outcome) -> DecodedAudio | None:
    """The request's audio decoded off the event loop (None without audio); 400 if undecodable or too long."""
    if req.audio is None:
        return None
    part = req.audio
    try:
        audio = await anyio.to_thread.run_sync(decode_audio, part.data, part.format,
                                               limiter=state.decode_limiter)
    except AudioDecodeError as exc:
        raise ApiError(400, "invalid_audio", f"{part.where}: {exc}", part.where) from None
    out.audio = AudioInfo(format=audio.format, sample_rate_hz=audio.sample_rate_hz,
                          channels=audio.channels, seconds=round(audio.seconds, 6),
                          bytes=audio.bytes)
    if audio.seconds > state.settings.max_audio_s:
        raise ApiError(400, "audio_too_long", f"{part.where}: audio is {audio.seconds:.2f} s long; "
                       f"the limit is {state.settings.max_audio_s:g} s", part.where)
    return audio


def _take_replica(state: ServerState, fault: str | None, out: _Outcome) -> str:
    """A free replica for this request, or 503/429 (no queue: a busy server refuses at once)."""
    s = state.settings
    ta = time.perf_counter()
    if state.dead_replicas >= s.replicas:
        raise ApiError(503, "worker_unavailable", f"every one of the {s.replicas} replicas exited; this server "
                       "answers no chat request until it is restarted", error_type="server_error")
    if not state.free_replicas:
        raise ApiError(429, "server_busy", f"all {s.replicas - state.dead_replicas} replicas are busy; retry later "
                       "(this server has no queue)", error_type="rate_limit_error")  # trtmc-server's type
    replica = state.free_replicas.pop(0)
    out.replica = replica
    if fault == "worker_crash":
        state.dead_replicas += 1  # the replica is not returned to the pool: it is gone
        raise ApiError(503, "worker_crashed", f"{replica} exited while handling this request (injected fault: "
                       "--fault-worker-crash-after); the server keeps serving with the replicas left",
                       error_type="server_error")
    out.admission_ms = round((time.perf_counter() - ta) * 1000.0, 3)
    return replica


async def _stream_answer(request: web.Request, req: ChatRequest, ans: EngineAnswer, request_id: str,
                         headers: dict[str, str], s: ServerSettings) -> web.StreamResponse:
    """The answer as server-sent events: one content chunk, the finish reason, usage if asked, [DONE]."""
    resp = web.StreamResponse(headers={**headers, "Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache"})
    await resp.prepare(request)
    created = int(time.time())
    base = {"id": f"chatcmpl-{request_id}", "object": "chat.completion.chunk", "created": created,
            "model": s.model_name}
    await resp.write(_sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                      "content": ans.text},
                                                "finish_reason": None}]}))
    if s.openai_finish_reason:
        await resp.write(_sse({**base, "choices": [{"index": 0, "delta": {},
                                                    "finish_reason": _finish_reason(ans, True)}]}))
    if req.include_usage:
        await resp.write(_sse({**base, "choices": [], "usage": {
            "prompt_tokens": 0, "completion_tokens": ans.completion_tokens,
            "total_tokens": ans.completion_tokens}}))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def _check_content_type(request: web.Request) -> None:
    """A JSON body only, as trtmc-server's FastAPI route (a body sent without the header is read as JSON)."""
    if "Content-Type" not in request.headers:
        return
    ctype = request.content_type
    if ctype != "application/json" and not ctype.endswith("+json"):
        raise ApiError(415, "unsupported_media_type", f"Content-Type {ctype!r} is not accepted; send the "
                       "chat request as JSON with Content-Type: application/json", "Content-Type")


async def _call_engine(state: ServerState, replica: str, audio: DecodedAudio | None,
                       req: ChatRequest, out: _Outcome, sent_id: str | None) -> EngineAnswer:
    """One engine call on `replica`; the replica is freed when the thread ends, even after a timeout.
    `sent_id`: the client's X-Request-ID (None where it sent none), which picks --fault-latency-share."""
    loop = asyncio.get_running_loop()
    latency_s = state.faults.latency_s(sent_id, req.audio.data if req.audio is not None else None, req.question)
    out.fault_latency_ms = round(latency_s * 1000.0, 3)

    def work() -> EngineAnswer:
        try:
            return state.engine.answer(audio, req.question, req.max_tokens, latency_s)
        finally:
            loop.call_soon_threadsafe(state.free_replicas.append, replica)

    t0 = time.perf_counter()
    try:
        with anyio.fail_after(state.settings.request_timeout_s):
            ans = await anyio.to_thread.run_sync(work, limiter=state.engine_limiter,
                                                 abandon_on_cancel=True)
    except TimeoutError:
        raise ApiError(504, "worker_timeout", f"the engine did not answer within --request-timeout "
                       f"{state.settings.request_timeout_s:g} s", error_type="server_error") from None
    except Exception as exc:  # the engine raised: this request fails, the server keeps serving
        raise ApiError(500, "engine_error", f"the engine failed on this request: "
                       f"{type(exc).__name__}: {exc}", error_type="server_error") from exc
    if ans.kind in state.settings.faults.wrong_kinds or state.faults.wrong_item(  # fault: whole, and wrong
            req.audio.data if req.audio is not None else None, req.question):
        ans = replace(ans, text=WRONG_ANSWER, completion_tokens=len(WRONG_ANSWER.split()))
    text = under_load(state.settings.faults, state.faults, state.active, ans.text)
    if text != ans.text:  # fault: another request's answer, or half of its own, whole-looking
        ans = replace(ans, text=text, completion_tokens=len(text.split()))
    out.roundtrip_ms = round((time.perf_counter() - t0) * 1000.0, 3)
    out.model_call_ms = round(ans.model_call_ms, 3)
    out.tokens = ans.completion_tokens
    return ans


@web.middleware
async def _error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error leaves in trtmc-server's body shape (aiohttp's own 404/405 included)."""
    try:
        return await handler(request)
    except ApiError as err:
        return _error_response(err, request.get("request_id", ""))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status, "invalid_request")
        mapped = ApiError(exc.status, code, f"{exc.reason}: {request.method} {request.path}")
        return _error_response(mapped, request.get("request_id", ""))


def build_app(state: ServerState) -> web.Application:
    """The aiohttp application over an already loaded engine."""
    # client_max_size above max_body_bytes: the handler enforces the limit itself (413 with our body).
    app = web.Application(middlewares=[_request_id_middleware, _error_middleware],
                          client_max_size=state.settings.max_body_bytes + 1024)
    app[_STATE] = state
    app.router.add_post(CHAT_ROUTE, _chat)
    app.router.add_get("/health/live", _health_live)
    app.router.add_get("/health/ready", _health_ready)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/metrics", _metrics)
    return app
