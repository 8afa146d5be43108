"""The Joiner's bulk entry points and its fast paths give exactly the events of the per-record path."""

from __future__ import annotations

from orchestrator.correlate import Joiner
from orchestrator.events import AudioFacts, ClientRecord, RequestCorrelated, ServerRecord
from orchestrator.judge.accounting import category_of, cause_of

S = 1_000_000_000
T0 = 1_800_000_000 * S


def _key(conversation_id: str) -> tuple[str, str]:
    item, _, arm = conversation_id.partition(":")
    return item, arm


def _client(i: int, *, via: str = "export") -> ClientRecord:
    kind = i % 7
    status = {1: 429, 2: 503, 3: None}.get(kind, 200)
    return ClientRecord(
        request_id=f"r{i}", via=via, aiperf_run="w", phase="profiling" if i % 3 else "warmup",  # type: ignore[arg-type]
        conversation_id=f"item-{i % 5}:audio", status_code=status, request_start_ns=T0 + i,
        request_end_ns=T0 + i + S // 10, error_code=status if status and status >= 400 else None,
        error_message="read timed out" if kind == 3 else "", error_type="TimeoutError" if kind == 3 else "",
        was_cancelled=kind == 4, request_latency_ms=100.0 + i, answer="yes" if via == "tap" else None,
    )


def _server(i: int) -> ServerRecord:
    audio = [AudioFacts(seconds=2.5, bytes=80044), AudioFacts(seconds=3.0), AudioFacts(), None][i % 4]
    return ServerRecord(request_id=f"r{i}", status=429 if i % 7 == 1 else 200, handler_ms=50.0 + i,
                        incarnation=1, end_unix_ns=T0 + i + S // 10, audio=audio,
                        error_code="server_busy" if i % 11 == 0 else "")


def _stream() -> list[ClientRecord | ServerRecord]:
    """Servers first (ingest reads the records file first), then clients with duplicates, a second
    source for some ids, client-only ids, and server-only ids."""
    servers = [_server(i) for i in range(60) if i % 13]  # some ids have no server record
    servers += [_server(5), _server(200)]  # a duplicate server record; a server-only id
    clients = [_client(i) for i in range(60)]
    clients += [_client(7), _client(8, via="tap"), _client(300)]  # duplicate, second source, client-only
    return [*servers, *clients]


def _per_record(stream: list) -> tuple[list, Joiner]:
    j = Joiner(key_parser=_key, source="ingest")
    out: list = []
    for rec in stream:
        out += j.add_server(rec) if isinstance(rec, ServerRecord) else j.add_client(rec)
    return out + j.flush() + j.close_window("w"), j


def _bulk(stream: list) -> tuple[list, Joiner]:
    j = Joiner(key_parser=_key, source="ingest")
    servers = [r for r in stream if isinstance(r, ServerRecord)]
    clients = [r for r in stream if isinstance(r, ClientRecord)]
    out = j.add_servers(servers) + j.add_clients(clients)
    return out + j.flush() + j.close_window("w"), j


def test_bulk_calls_give_the_per_record_events() -> None:
    """add_servers/add_clients: the same events, in the same order, and the same counters."""
    one, j1 = _per_record(_stream())
    many, j2 = _bulk(_stream())
    assert one == many
    assert j1.statistics() == j2.statistics()
    assert j1.statistics().duplicates == 2


def test_settle_fast_path_agrees_with_cause_of() -> None:
    """Every correlated request carries the cause and ok that cause_of/category_of give its halves."""
    events, _ = _bulk(_stream())
    servers = {r.request_id: r for r in _stream() if isinstance(r, ServerRecord)}
    clients = {r.request_id: r for r in _stream() if isinstance(r, ClientRecord) and r.via == "export"}
    correlated = [e for e in events if isinstance(e, RequestCorrelated)]
    assert len(correlated) > 50
    for ev in correlated:
        client, server = clients[ev.request_id], servers.get(ev.request_id)
        cause = cause_of(client, server, crashed=False)
        assert (ev.cause, ev.ok) == (cause, cause == "ok"), ev.request_id
        assert ev.has_server == (server is not None)
        if server is not None:
            audio = server.audio or AudioFacts()
            assert (ev.audio_seconds, ev.audio_bytes) == (audio.seconds, audio.bytes)
            assert type(ev.audio_bytes) in (int, type(None)) and ev.http_status == (client.status_code or server.status)
    assert {category_of(c) for c in clients.values()} >= {"ok", "http_error", "timeout", "cancelled"}
