"""The HTTP chat client returns what a reply says about its own end: finish_reason and completion_tokens."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from adapters.chat import ChatClient

pytestmark = pytest.mark.anyio


def _reply(content: Any, finish: Any, usage: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "c", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


@pytest.mark.parametrize(("body", "text", "finish", "tokens"), [
    (_reply("blue", "length", {"prompt_tokens": 0, "completion_tokens": 8, "total_tokens": 8}), "blue", "length", 8),
    (_reply("blue", "stop", {"completion_tokens": 1}), "blue", "stop", 1),
    (_reply("blue", None, {"completion_tokens": 1}), "blue", None, 1),  # trtmc-server: always null
    (_reply(None, None, None), None, None, None),
    ({"choices": []}, None, None, None),
])
async def test_reply_carries_finish_reason_and_completion_tokens(body: dict[str, Any], text: str | None,
                                                                 finish: str | None, tokens: int | None) -> None:
    seen: list[dict[str, Any]] = []

    async def chat(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.json_response(body, headers={"x-request-id": request.headers["X-Request-ID"]})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat)])
    async with (TestServer(app, host="127.0.0.1") as server,
                ChatClient(str(server.make_url("")), "m", timeout_s=10, max_tokens=8) as client):
        reply = await client.ask("What colour?", None, request_id="r-1")
    assert (reply.status, reply.text, reply.finish_reason, reply.completion_tokens) == (200, text, finish, tokens)
    assert seen[0]["max_completion_tokens"] == 8  # the limit the completeness check compares against
