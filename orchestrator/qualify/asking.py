"""One HTTP question journaled as a ClientRecord: how every probe and correctness request is asked."""

from __future__ import annotations

from orchestrator.dataset import ArmRequest, session_key
from orchestrator.events import ClientRecord
from orchestrator.spine.ports import ChatAnswer, ChatSession, EventSink

__all__ = ["ask_journaled"]


async def ask_journaled(bus: EventSink, client: ChatSession, req: ArmRequest, *, request_id: str, window: str,
                        source: str) -> ChatAnswer:
    """Ask over HTTP and journal the exchange as a ClientRecord, so the correlator joins it with the
    server's record and accounts it in `window` like any AIPerf request."""
    reply = await client.ask(req.text, req.audio_path, request_id=request_id)
    timeout = reply.status == 0 and "Timeout" in reply.error
    await bus.publish(ClientRecord(
        source=source, request_id=request_id, via="probe", aiperf_run=window,
        conversation_id=session_key(req.item_id, req.arm), phase="profiling",
        request_start_ns=reply.start_unix_ns, request_end_ns=reply.end_unix_ns,
        status_code=reply.status or None, error_type="timeout" if timeout else ("connection" if reply.status == 0 else ""),
        error_message=reply.error or ("" if reply.status == 200 else reply.body[:500]),
        request_latency_ms=reply.latency_ms, answer=reply.text, server_timing_ms=reply.server_timing_ms,
        echoed_request_id=reply.echoed_request_id))
    return reply
