"""NativeWorker against small real worker processes speaking TRTMC's JSON-lines protocol."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adapters.chat.native import NativeWorker
from orchestrator.base.errors import ServerError

pytestmark = pytest.mark.anyio

# A worker in the shape of TRTMC's: a ready line, then one JSON answer per request. It echoes the
# request's config and audio back as its answer text; "die" makes it exit after a runtime_error reply.
WORKER = r"""
import json, sys
caps = json.loads(sys.argv[1])
print(json.dumps({"event": "ready", "protocol_version": 2, "capabilities": caps}), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("op") == "shutdown":
        print(json.dumps({"id": msg["id"], "ok": True, "result": {"status": "shutting_down"}}), flush=True)
        break
    if msg["prompt"] == "die":
        print(json.dumps({"id": msg["id"], "ok": False, "error": {"type": "runtime_error", "message": "boom"}}),
              flush=True)
        sys.exit(1)
    text = json.dumps({"config": msg.get("config"), "audio": msg.get("audio")}, sort_keys=True)
    print(json.dumps({"id": msg["id"], "ok": True, "result": {"text": text, "model_call_ms": 1.0,
                                                              "timing_scope": "public_task_call_wall"}}), flush=True)
"""


def _worker(tmp_path: Path, caps: list[str]) -> NativeWorker:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return NativeWorker([sys.executable, str(script), json.dumps(caps)], log_path=tmp_path / "native.log",
                        startup_timeout_s=30, request_timeout_s=30)


async def test_config_mirrors_the_chat_route_and_audio_travels(tmp_path: Path) -> None:
    """Temperature 0 and the chat template, as trtmc-server's chat route configures its worker."""
    async with _worker(tmp_path, ["audio_text_to_text"]) as w:
        reply = await w.generate("How many beeps?", "/data/beeps.wav")
    assert reply.ok and json.loads(reply.text) == {"audio": {"path": "/data/beeps.wav"},
                                                   "config": {"temperature": 0.0, "use_chat_template": True}}


async def test_text_only_worker_is_refused_for_audio(tmp_path: Path) -> None:
    """TRTMC's text worker advertises text_generation and would drop the audio field: refused, named."""
    async with _worker(tmp_path, ["text_generation"]) as w:
        with pytest.raises(ServerError, match=r"advertises capabilities \['text_generation'\], none of which "
                                              r"takes audio and a question"):
            await w.generate("How many beeps?", "/data/beeps.wav")
        assert (await w.generate("Say hi.", None)).ok  # text alone is what it does


async def test_worker_gone_after_a_fatal_error_is_a_server_error(tmp_path: Path) -> None:
    """After a runtime_error reply the worker exits; the next request is a ServerError, not a traceback."""
    async with _worker(tmp_path, ["audio_text_to_text"]) as w:
        first = await w.generate("die", "/data/a.wav")
        assert not first.ok and first.error == "runtime_error: boom"
        with pytest.raises(ServerError, match=r"(no longer reads requests|closed its output)"):
            for _ in range(50):  # the pipe breaks once the worker is gone
                await w.generate("again", "/data/a.wav")
