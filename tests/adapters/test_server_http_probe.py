"""The supervisor's HTTP probe adapter: an answer's status and body (whole however it is framed), and a sentence
naming the URL when none came (refused, silent past the timeout, cut short)."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import SocketStream

from adapters.server.http_probe import PlainHttpProbe

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _server(answer: Callable[[SocketStream], Awaitable[None]]) -> AsyncIterator[int]:
    """A loopback server that reads the request head, then runs `answer` on the connection; yields its port."""
    requests: list[bytes] = []

    async def serve(stream: SocketStream) -> None:
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            requests.append(head)
            await answer(stream)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield listener.extra(anyio.abc.SocketAttribute.local_port)
        finally:
            tg.cancel_scope.cancel()
    assert all(r.startswith(b"GET /") and b"\r\nConnection: close\r\n" in r for r in requests)


async def test_an_answer_is_its_status_and_body() -> None:
    """A real HTTP answer comes back as (status, body)."""

    async def answer(stream: SocketStream) -> None:
        await stream.send(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\nConnection: close\r\n\r\nwarming")

    probe = PlainHttpProbe()
    async with _server(answer) as port:
        assert await probe.get(f"http://127.0.0.1:{port}/health/ready", 5.0) == (503, b"warming")
    await probe.aclose()


async def test_a_chunked_answer_kept_open_is_read_whole() -> None:
    """A chunked body is joined, and the GET ends at its last chunk though the server keeps the connection."""

    async def answer(stream: SocketStream) -> None:
        await stream.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n")
        await anyio.sleep(30)  # never closes on its own

    probe = PlainHttpProbe()
    async with _server(answer) as port:
        t0 = time.monotonic()
        assert await probe.get(f"http://127.0.0.1:{port}/v1/models?x=1", 10.0) == (200, b'{"a": 1}')
        assert time.monotonic() - t0 < 5


async def test_a_silent_server_is_said_after_the_timeout() -> None:
    """A server that accepts and never answers gives the sentence with the URL once the timeout has passed."""

    async def answer(stream: SocketStream) -> None:
        await anyio.sleep(30)

    probe = PlainHttpProbe()
    async with _server(answer) as port:
        t0 = time.monotonic()
        got = await probe.get(f"http://127.0.0.1:{port}/health/ready", 0.5)
        assert 0.4 < time.monotonic() - t0 < 5
    assert got == f"GET http://127.0.0.1:{port}/health/ready: no answer within 0.5 s"


async def test_an_answer_cut_short_is_said() -> None:
    """A body shorter than its Content-Length (the server closed mid-answer) is said, not returned as whole."""

    async def answer(stream: SocketStream) -> None:
        await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")

    probe = PlainHttpProbe()
    async with _server(answer) as port:
        got = await probe.get(f"http://127.0.0.1:{port}/v1/models", 5.0)
    assert isinstance(got, str) and got.startswith(f"GET http://127.0.0.1:{port}/v1/models: IncompleteRead")


async def test_no_answer_is_a_sentence_naming_the_url() -> None:
    """A refused connection is said, with the URL, instead of raised."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        probe = PlainHttpProbe()
        got = await probe.get(f"http://127.0.0.1:{port}/v1/models", 2.0)
        await probe.aclose()
    assert got == f"GET http://127.0.0.1:{port}/v1/models: cannot connect (Connection refused)"
