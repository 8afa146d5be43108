"""Parse and validate an OpenAI chat-completions body into one question and at most one audio part.

Pure: bytes in, a ChatRequest or an ApiError out (trtmc-server's error shape and codes); no decoding.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import TypedDict

from adapters.media import SUPPORTED_FORMATS

__all__ = ["ApiError", "AudioPart", "ChatRequest", "ErrorBody", "ErrorDetail", "parse_chat", "REQUEST_ID_RE"]

REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")

_KNOWN_FIELDS = {"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens",
                 "temperature", "top_p", "top_k", "seed", "user", "n", "stop", "frequency_penalty",
                 "presence_penalty", "ignore_eos", "min_tokens"}
_UNSUPPORTED = {"tools", "tool_choice", "functions", "function_call", "logprobs", "top_logprobs",
                "response_format", "logit_bias", "modalities", "audio", "parallel_tool_calls"}
_MIME_FORMATS = {"wav": "wav", "x-wav": "wav", "wave": "wav", "vnd.wave": "wav", "mpeg": "mp3",
                 "mp3": "mp3", "flac": "flac", "x-flac": "flac", "ogg": "ogg", "vorbis": "ogg",
                 "opus": "ogg"}


class ErrorDetail(TypedDict):
    message: str
    type: str
    param: str | None
    code: str


class ErrorBody(TypedDict):
    """trtmc-server's error body."""

    error: ErrorDetail


class ApiError(Exception):
    """An HTTP error in trtmc-server's body shape: {"error":{message,type,param,code}}."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None,
                 error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.param, self.type = (status, code, message, param,
                                                                       error_type)

    def body(self) -> ErrorBody:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}


@dataclass(frozen=True, slots=True)
class AudioPart:
    """The audio of the request, still encoded; `where` names the JSON path it came from."""

    data: bytes
    format: str
    where: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    question: str
    audio: AudioPart | None
    stream: bool
    include_usage: bool
    max_tokens: int | None


def _bad(message: str, param: str | None = None, code: str = "invalid_request") -> ApiError:
    return ApiError(400, code, message, param)


def _b64(data: object, where: str) -> bytes:
    if not isinstance(data, str) or not data:
        raise _bad(f"{where} must be a non-empty base64 string", where)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _bad(f"{where} is not valid base64: {exc}", where) from None


# A request body is the client's JSON, checked field by field as it is read: its values are objects until then.
def _audio_part(part: dict[str, object], where: str) -> AudioPart:
    if part["type"] == "input_audio":
        body = part.get("input_audio")
        if not isinstance(body, dict):
            raise _bad(f"{where}.input_audio must be an object with 'data' and 'format'",
                       f"{where}.input_audio")
        extra = set(body) - {"data", "format"}
        if extra:
            raise _bad(f"unknown field {where}.input_audio.{sorted(extra)[0]}; allowed: data, format",
                       f"{where}.input_audio")
        fmt = body.get("format")
        if not isinstance(fmt, str) or fmt.lower() not in SUPPORTED_FORMATS:
            raise _bad(f"{where}.input_audio.format {fmt!r} is not supported; supported: "
                       f"{', '.join(SUPPORTED_FORMATS)}", f"{where}.input_audio.format",
                       code="unsupported_audio_format")
        return AudioPart(_b64(body.get("data"), f"{where}.input_audio.data"), fmt.lower(), where)
    body = part.get("audio_url")
    url = body.get("url") if isinstance(body, dict) else body
    if not isinstance(url, str):
        raise _bad(f"{where}.audio_url must be an object with a 'url' string", f"{where}.audio_url")
    m = re.match(r"^data:audio/([A-Za-z0-9.+-]+)(?:;[^,;]*)*;base64,(.*)$", url, re.S)
    if not m:
        raise _bad(f"{where}.audio_url.url must be a data:audio/<type>;base64,... URL "
                   "(remote URLs are not fetched)", f"{where}.audio_url.url")
    fmt = _MIME_FORMATS.get(m.group(1).lower())
    if fmt is None:
        raise _bad(f"{where}.audio_url type audio/{m.group(1)} is not supported; supported: "
                   "audio/wav, audio/mpeg, audio/flac, audio/ogg", f"{where}.audio_url.url",
                   code="unsupported_audio_format")
    return AudioPart(_b64(m.group(2), f"{where}.audio_url.url (base64 part)"), fmt, where)


def _content(content: object, where: str, allow_audio: bool) -> tuple[list[str], list[AudioPart]]:
    if isinstance(content, str):
        return [content], []
    if not isinstance(content, list) or not content:
        raise _bad(f"{where}.content must be a string or a non-empty list of content parts",
                   f"{where}.content")
    texts: list[str] = []
    audio: list[AudioPart] = []
    for i, part in enumerate(content):
        pw = f"{where}.content[{i}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _bad(f"{pw} must be an object with a 'type'", pw)
        kind = part["type"]
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise _bad(f"{pw}.text must be a string", f"{pw}.text")
            texts.append(part["text"])
        elif kind in ("input_audio", "audio_url"):
            if not allow_audio:
                raise _bad(f"{pw}: a system message may hold only text parts", pw)
            audio.append(_audio_part(part, pw))
        else:
            raise _bad(f"{pw}.type {kind!r} is not supported; allowed: text, input_audio, audio_url",
                       f"{pw}.type")
    return texts, audio


def _int_field(body: dict[str, object], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _bad(f"{name} must be a positive integer, got {value!r}", name)
    return value


def _check_field_names(body: dict[str, object]) -> None:
    for name in body:
        if name in _UNSUPPORTED:
            raise _bad(f"parameter {name!r} is not supported by this server", name,
                       code="unsupported_parameter")
        if name not in _KNOWN_FIELDS:
            raise _bad(f"unknown field {name!r}; allowed: {', '.join(sorted(_KNOWN_FIELDS))}", name)


def _messages(body: dict[str, object]) -> list[dict[str, object]]:
    """The messages list: one user message, optionally after one system message."""
    given = body.get("messages")
    if not isinstance(given, list) or not given:
        raise _bad("messages must be a non-empty list", "messages")
    messages: list[dict[str, object]] = []
    for i, msg in enumerate(given):
        if not isinstance(msg, dict) or msg.get("role") not in ("system", "user", "developer"):
            raise _bad(f"messages[{i}] must be an object with role 'system' or 'user' (one question "
                       "per request; no assistant turns)", f"messages[{i}].role")
        extra = set(msg) - {"role", "content", "name"}
        if extra:
            raise _bad(f"unknown field messages[{i}].{sorted(extra)[0]}; allowed: role, content, name",
                       f"messages[{i}]")
        messages.append(msg)
    roles = [m["role"] for m in messages]
    if roles.count("user") != 1 or roles[-1] != "user" or len(messages) > 2:
        raise _bad(f"messages must be one user message, optionally preceded by one system message; "
                   f"got roles {roles}", "messages")
    return messages


def parse_chat(raw: bytes) -> ChatRequest:
    """Validate a chat body; raises ApiError (400) naming the field and what was allowed."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _bad(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _bad("request body must be a JSON object")
    _check_field_names(body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model must be a non-empty string", "model")
    if body.get("n") not in (None, 1):
        raise _bad(f"n must be 1, got {body['n']!r}", "n", code="unsupported_parameter")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad(f"stream must be true or false, got {stream!r}", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict) or set(options) - {"include_usage"}:
        raise _bad("stream_options may only hold include_usage", "stream_options")
    max_tokens = _int_field(body, "max_completion_tokens") or _int_field(body, "max_tokens")
    messages = _messages(body)
    if len(messages) == 2:
        _content(messages[0].get("content"), "messages[0]", allow_audio=False)
    texts, audio = _content(messages[-1].get("content"), f"messages[{len(messages) - 1}]",
                            allow_audio=True)
    if len(audio) > 1:
        raise _bad(f"at most one audio part per request, got {len(audio)} "
                   f"({', '.join(a.where for a in audio)})", "messages")
    question = " ".join(t.strip() for t in texts if t.strip())
    if not question:
        raise _bad("the user message has no text question", f"messages[{len(messages) - 1}].content")
    return ChatRequest(model=model, question=question, audio=audio[0] if audio else None,
                       stream=stream, include_usage=bool(options.get("include_usage")),
                       max_tokens=max_tokens)
