"""A chat server (and a native worker) that answers like the reference engine, except that the answers to
one question are not whole, in a scripted way. For the completeness checks of `aqbench qualify`.

The engine's real answers let the capability probe pass; only requests whose question contains
`--target` get the defect, so the model fails where the defect is (correctness or, with
`--under-load-only`, the AIPerf stage: ids not starting with `aqb-`). Defects:

- `empty`: an empty message;
- `truncate-finish`: the first 2 words of a longer answer with `finish_reason` "length" (2 tokens, below
  any limit: only the finish reason tells); every other answer says `finish_reason` "stop";
- `truncate-count`: a long answer cut at the request's limit (at most 64 words), `finish_reason` null and
  completion_tokens equal to the limit (trtmc-server's way: only the count tells);
- `echo`: the question itself;
- `repeat`: the engine's answer repeated 6 times;
- `clean`: no defect (the server of a model whose native worker has one).

`--defect from-model` takes the defect from the model name's suffix after its last `--`
(`stub--echo` -> echo), so one bench.toml serves several defective models. Speaks trtmc-server's
readiness, models, X-Request-ID and records contract. `worker` as the first argument runs TRTMC's
JSON-lines worker protocol instead (`--defect` applies there).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import signal
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

DEFECTS = ("empty", "truncate-finish", "truncate-count", "echo", "repeat", "clean")
_LONG = "the tone I hear is a steady sine wave at about one thousand hertz and it goes on for a while"
# Distinct words, so that a long cut answer is truncated and nothing else (not a repetition).
_WORDS = [f"tone{i}" for i in range(64)]


def _defect(name: str, model: str) -> str:
    defect = model.rsplit("--", 1)[-1] if name == "from-model" else name
    if defect not in DEFECTS:
        raise SystemExit(f"defect {defect!r} (from {name!r}, model {model!r}) is not one of {DEFECTS}")
    return defect


def inject(defect: str, question: str, text: str, limit: int | None) -> tuple[str, str | None, int]:
    """The defective answer, its finish_reason and its completion token count (words)."""
    if defect == "empty":
        return "", None, 0
    if defect == "truncate-finish":
        return " ".join(_LONG.split()[:2]), "length", 2
    if defect == "truncate-count":
        words = _WORDS[:limit or 16]
        return " ".join(words), None, len(words)
    if defect == "echo":
        return question, None, len(question.split())
    if defect == "repeat":
        out = " ".join([text] * 6)
        return out, None, len(out.split())
    return text, None, len(text.split())


def serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    from adapters.media import decode_audio
    from adapters.reference.engine import Engine

    engine = Engine(workers=1)
    defect = _defect(args.defect, args.model_name)
    records = open(args.records, "a") if args.records else None

    def record(rid: str, status: int, t0: float, start_ns: int, tokens: int) -> None:
        if records is None:
            return
        ms = (time.perf_counter() - t0) * 1000
        records.write(json.dumps({"request_id": rid, "route": "/v1/chat/completions", "model": args.model_name,
                                  "replica": "stub-0", "status": status, "handler_ms": ms, "admission_ms": 0.0,
                                  "model_call_ms": ms / 2, "timing_scope": "public_task_call_wall",
                                  "worker_roundtrip_ms": ms * 0.8, "completion_tokens": tokens,
                                  "streaming": "none", "start_unix_ns": start_ns, "end_unix_ns": time.time_ns()}) + "\n")
        records.flush()

    async def chat(request: web.Request) -> web.Response:
        t0, start_ns = time.perf_counter(), time.time_ns()
        rid = request.headers.get("X-Request-ID") or f"req-{uuid.uuid4().hex}"
        body = await request.json()
        parts = body["messages"][-1]["content"]
        parts = parts if isinstance(parts, list) else [{"type": "text", "text": parts}]
        question = " ".join(p.get("text", "") for p in parts if p.get("type") == "text").strip()
        clips = [p["input_audio"] for p in parts if p.get("type") == "input_audio"]
        limit = body.get("max_completion_tokens") or body.get("max_tokens")

        def answer() -> Any:
            audio = decode_audio(base64.b64decode(clips[0]["data"]), clips[0]["format"]) if clips else None
            return engine.answer(audio, question, limit)

        # Off the event loop: health probes must keep answering while the engine works (a busy machine
        # would otherwise make the supervisor restart a healthy server).
        ans = await asyncio.to_thread(answer)
        text, finish, tokens = ans.text, None, ans.completion_tokens
        hit = args.target in question and not (args.under_load_only and rid.startswith("aqb-"))
        if hit:
            text, finish, tokens = inject(defect, question, text, limit)
        if defect == "truncate-finish" and finish is None:
            finish = "stop"
        record(rid, 200, t0, start_ns, tokens)
        return web.json_response({"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()),
                                  "model": args.model_name,
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": finish}],
                                  "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}},
                                 headers={"x-request-id": rid, "Server-Timing": f"model;dur={ans.model_call_ms:.3f}"})

    async def ready(_: web.Request) -> web.Response:
        return web.json_response({"status": "ready", "degraded": False})

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": args.model_name, "object": "model", "created": 0,
                                                              "owned_by": "stub", "trtmc": {"streaming": False}}]})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/health/ready", ready),
                    web.get("/health/live", ready), web.get("/v1/models", models)])
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    web.run_app(app, host=args.host, port=args.port, print=None, handle_signals=True)


def work(args: argparse.Namespace) -> int:
    """TRTMC's JSON-lines worker protocol over the reference worker, with the defect on target prompts."""
    from adapters.reference.engine import Engine
    from adapters.reference.worker import handle

    out = sys.stdout
    sys.stdout = sys.stderr
    defect = _defect(args.defect, args.model_name)
    engine = Engine(workers=1)

    def send(obj: Mapping[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    send({"event": "ready", "protocol_version": 2, "capabilities": ["audio_text_to_text"]})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("op") == "shutdown":
            send({"id": msg.get("id"), "ok": True, "result": {"status": "shutting_down"}})
            return 0
        reply = handle(engine, msg)
        prompt = str(msg.get("prompt", "")).strip()
        if reply.get("ok") and args.target in prompt:
            limit = (msg.get("config") or {}).get("max_new_tokens")
            text, _finish, tokens = inject(defect, prompt, reply["result"]["text"], limit)
            reply["result"].update({"text": text, "completion_tokens": tokens})
        send(reply)
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("role", nargs="?", choices=["serve", "worker"], default="serve")
    ap.add_argument("--defect", choices=[*DEFECTS, "from-model"], required=True)
    ap.add_argument("--target", required=True, help="the defect applies to questions containing this text")
    ap.add_argument("--under-load-only", action="store_true", help="only to ids not starting with aqb-")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--model-name", default="")
    ap.add_argument("--records", default="")
    args = ap.parse_args()
    if args.role == "worker":
        raise SystemExit(work(args))
    serve(args)


if __name__ == "__main__":
    main()
