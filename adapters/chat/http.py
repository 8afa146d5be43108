"""One chat completion at a time over HTTP, with an optional `input_audio` part (probes, correctness).
Keeps the whole evidence of each exchange (status, body, echoed request id, Server-Timing). Never retries:
a retry would hide exactly what a qualification must see."""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

import aiohttp
import anyio
import msgspec

__all__ = ["AudioPart", "ChatBody", "ChatClient", "ChatReply", "audio_part"]

_FORMATS = {".wav": "wav", ".mp3": "mp3", ".flac": "flac", ".ogg": "ogg"}
_TIMING_RE = re.compile(r"(?:^|,)\s*model;dur=([0-9.]+)")
_EVIDENCE_BYTES = 4096


class InputAudio(TypedDict):
    data: str  # base64
    format: str


class AudioPart(TypedDict):
    """An OpenAI chat `input_audio` content part."""

    type: Literal["input_audio"]
    input_audio: InputAudio


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: list[TextPart | AudioPart]


class ChatBody(TypedDict):
    """The request body this client POSTs to /v1/chat/completions."""

    model: str
    messages: list[UserMessage]
    stream: bool
    temperature: float
    max_completion_tokens: NotRequired[int]


class ChatReply(msgspec.Struct, frozen=True, kw_only=True):
    """What came back for one request; `text` is None unless the status was 200 with a message."""

    request_id: str
    status: int  # 0 when no HTTP response arrived (connection refused, timeout)
    text: str | None
    body: str
    echoed_request_id: str = ""
    server_timing_ms: float | None = None
    latency_ms: float = 0.0
    error: str = ""  # transport error, when status == 0
    start_unix_ns: int = 0
    end_unix_ns: int = 0
    # What the reply said about its own end: None where the server left it null or out (trtmc-server).
    finish_reason: str | None = None
    completion_tokens: int | None = None


async def audio_part(path: str) -> AudioPart:
    """The `input_audio` content part for a file (base64 data + format from its suffix)."""
    suffix = Path(path).suffix.lower()
    if suffix not in _FORMATS:
        raise ValueError(f"{path}: cannot send audio of type {suffix!r}; expected one of {sorted(_FORMATS)}")
    data = await anyio.Path(path).read_bytes()
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": _FORMATS[suffix]}}


class ChatClient:
    """`async with ChatClient(base_url, model) as c: reply = await c.ask(text, audio_path, request_id=...)`."""

    def __init__(self, base_url: str, model: str, *, timeout_s: float = 60.0, max_tokens: int | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> ChatClient:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            with anyio.CancelScope(shield=True):
                await self._session.close()

    def body(self, text: str, audio: AudioPart | None) -> ChatBody:
        content: list[TextPart | AudioPart] = [{"type": "text", "text": text}]
        if audio is not None:
            content.append(audio)
        body: ChatBody = {"model": self.model, "messages": [{"role": "user", "content": content}],
                          "stream": False, "temperature": 0}
        if self.max_tokens:
            body["max_completion_tokens"] = self.max_tokens
        return body

    async def ask(self, text: str, audio_path: str | None, *, request_id: str) -> ChatReply:
        """POST one question (with the clip when `audio_path` is given). Never raises for HTTP or transport
        failures: they are part of the reply. Cancellation aborts the request."""
        assert self._session is not None, "use ChatClient as an async context manager"
        audio = await audio_part(audio_path) if audio_path else None
        payload = self.body(text, audio)
        start_ns = time.time_ns()
        t0 = time.perf_counter()
        try:
            async with self._session.post(f"{self.base_url}/v1/chat/completions", json=payload,
                                          headers={"X-Request-ID": request_id}) as resp:
                raw = await resp.read()
                latency_ms = (time.perf_counter() - t0) * 1000
                timing = _TIMING_RE.search(resp.headers.get("server-timing", ""))
                done = _completion_of(raw) if resp.status == 200 else None
                return ChatReply(
                    request_id=request_id, status=resp.status, text=done.text if done else None,
                    body=raw[:_EVIDENCE_BYTES].decode("utf-8", "replace"),
                    echoed_request_id=resp.headers.get("x-request-id", ""),
                    server_timing_ms=float(timing.group(1)) if timing else None, latency_ms=latency_ms,
                    start_unix_ns=start_ns, end_unix_ns=time.time_ns(),
                    finish_reason=done.finish_reason if done else None,
                    completion_tokens=done.completion_tokens if done else None,
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            return ChatReply(request_id=request_id, status=0, text=None, body="",
                             latency_ms=(time.perf_counter() - t0) * 1000,
                             error=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                             start_unix_ns=start_ns, end_unix_ns=time.time_ns())


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _Usage(msgspec.Struct):
    completion_tokens: int | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None


class _Done(msgspec.Struct, frozen=True):
    text: str | None
    finish_reason: str | None
    completion_tokens: int | None


_completion = msgspec.json.Decoder(_Completion)


def _completion_of(raw: bytes) -> _Done | None:
    """The first choice's text and finish_reason and the usage's completion_tokens; None when the body
    is not a chat completion."""
    try:
        done = _completion.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    tokens = done.usage.completion_tokens if done.usage else None
    if not done.choices:
        return _Done(text=None, finish_reason=None, completion_tokens=tokens)
    first = done.choices[0]
    return _Done(text=first.message.content, finish_reason=first.finish_reason, completion_tokens=tokens)
