"""The supervisor's HTTP probe adapter: an answer's status and body, and a sentence naming the URL when none came."""

from __future__ import annotations

import socket

import anyio
import pytest
from anyio.abc import SocketStream

from adapters.server.http_probe import AiohttpProbe

pytestmark = pytest.mark.anyio


async def test_an_answer_is_its_status_and_body() -> None:
    """A real HTTP answer comes back as (status, body)."""

    async def answer(stream: SocketStream) -> None:
        async with stream:
            await stream.receive()
            await stream.send(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\nConnection: close\r\n\r\nwarming")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    probe = AiohttpProbe()
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        try:
            assert await probe.get(f"http://127.0.0.1:{port}/health/ready", 5.0) == (503, b"warming")
        finally:
            await probe.aclose()
            tg.cancel_scope.cancel()


async def test_no_answer_is_a_sentence_naming_the_url() -> None:
    """A refused connection is said, with the URL, instead of raised."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        probe = AiohttpProbe()
        got = await probe.get(f"http://127.0.0.1:{port}/v1/models", 2.0)
        await probe.aclose()
    assert isinstance(got, str) and got.startswith(f"GET http://127.0.0.1:{port}/v1/models: cannot connect")
