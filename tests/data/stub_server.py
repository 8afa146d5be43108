"""A scripted OpenAI-chat server for AIPerf tests until (and beside) the reference server.

Echoes X-Request-ID, sends `Server-Timing: model;dur=MS`, appends trtmc-style records lines, and
can inject 500s, 429s and latency. Run: python tests/data/stub_server.py --port P --records FILE.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
import uuid

from aiohttp import web


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model-name", default="stub")
    p.add_argument("--records", required=True)
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--error-every", type=int, default=0, help="every Nth request gets a 500")
    p.add_argument("--slow-every", type=int, default=0, help="every Nth request is 10x slower")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main() -> None:
    args = _args()
    rng = random.Random(args.seed)
    fd = os.open(args.records, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    count = 0

    def record(rid: str, status: int, t0: int, model_ms: float, code: str = "") -> None:
        end = time.time_ns()
        handler_ms = (end - t0) / 1e6
        line = {
            "request_id": rid, "route": "/v1/chat/completions", "model": args.model_name, "replica": "w0",
            "status": status, "handler_ms": handler_ms, "admission_ms": 0.01, "model_call_ms": model_ms,
            "timing_scope": "public_task_call_wall", "worker_roundtrip_ms": model_ms + 0.2,
            "completion_tokens": 3, "streaming": "none", "input_tokens": None, "error_code": code,
            "start_unix_ns": t0, "end_unix_ns": end,
        }
        os.write(fd, (json.dumps(line) + "\n").encode())

    async def chat(request: web.Request) -> web.StreamResponse:
        nonlocal count
        t0 = time.time_ns()
        count += 1
        n = count
        rid = request.headers.get("X-Request-ID") or f"req-{uuid.uuid4().hex}"
        body = await request.json()
        delay = args.latency_ms * (1 + rng.random() * 0.2)
        if args.slow_every and n % args.slow_every == 0:
            delay *= 10
        await asyncio.sleep(delay / 1000)
        model_ms = delay * 0.9
        headers = {"x-request-id": rid, "Server-Timing": f"model;dur={model_ms:.3f}"}
        if args.error_every and n % args.error_every == 0:
            record(rid, 500, t0, model_ms, "internal_error")
            err = {"error": {"message": "injected failure", "type": "server_error", "param": None,
                             "code": "internal_error"}}
            return web.json_response(err, status=500, headers=headers)
        text = f"answer {len(json.dumps(body)) % 7}"
        out = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
               "model": args.model_name, "choices": [{"index": 0, "message": {"role": "assistant",
               "content": text}, "finish_reason": None}],
               "usage": {"prompt_tokens": 0, "completion_tokens": 3, "total_tokens": 3}}
        resp = web.json_response(out, headers=headers)
        record(rid, 200, t0, model_ms)
        return resp

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": args.model_name, "object": "model"}]})

    async def ready(_: web.Request) -> web.Response:
        return web.json_response({"status": "ready", "degraded": False})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/v1/models", models),
                    web.get("/health/ready", ready)])
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
