"""A small chat server with one deliberate flaw, for qualify's capability tests.

Modes: `reject-audio` answers 400 to any non-text part exactly as trtmc-server does today;
`text-only` ignores the audio and answers from the question alone; `transcribe` returns the clip's
transcript (real Whisper tiny.en) whatever the question. `from-model` takes the mode from the model name's
suffix after its last `--` (`flawed--transcribe` -> transcribe), so one qualify serves several flawed models.
Speaks trtmc-server's readiness, models, X-Request-ID and records contract so the orchestrator treats it like
any server.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import signal
import sys
import time
import uuid
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))


MODES = ("reject-audio", "text-only", "transcribe")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=[*MODES, "from-model"], required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--records", default="")
    args = ap.parse_args()
    if args.mode == "from-model":
        args.mode = args.model_name.rsplit("--", 1)[-1]
        if args.mode not in MODES:
            ap.error(f"mode {args.mode!r} (from model {args.model_name!r}) is not one of {MODES}")
    recognizer = None
    if args.mode == "transcribe":
        from adapters.reference.asr import Recognizer

        recognizer = Recognizer()
    records = open(args.records, "a") if args.records else None

    def record(rid: str, status: int, t0: float, start_ns: int) -> None:
        if records is None:
            return
        ms = (time.perf_counter() - t0) * 1000
        records.write(json.dumps({"request_id": rid, "route": "/v1/chat/completions", "model": args.model_name,
                                  "replica": "stub-0", "status": status, "handler_ms": ms, "admission_ms": 0.0,
                                  "model_call_ms": ms / 2, "timing_scope": "public_task_call_wall",
                                  "worker_roundtrip_ms": ms * 0.8, "completion_tokens": 3, "streaming": "none",
                                  "start_unix_ns": start_ns, "end_unix_ns": time.time_ns()}) + "\n")
        records.flush()

    async def chat(request: web.Request) -> web.Response:
        t0, start_ns = time.perf_counter(), time.time_ns()
        rid = request.headers.get("X-Request-ID") or f"req-{uuid.uuid4().hex}"
        body = await request.json()
        parts = body["messages"][-1]["content"]
        parts = parts if isinstance(parts, list) else [{"type": "text", "text": parts}]
        question = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
        audio = [p for p in parts if p.get("type") != "text"]
        headers = {"x-request-id": rid}
        if audio and args.mode == "reject-audio":
            record(rid, 400, t0, start_ns)
            return web.json_response({"error": {"message": "Input should be a valid string",
                                                "type": "invalid_request_error", "param": "str",
                                                "code": "invalid_request"}}, status=400, headers=headers)
        if args.mode == "transcribe" and audio:
            from adapters.media import decode_audio, resample, to_mono

            clip = audio[0]["input_audio"]
            decoded = decode_audio(base64.b64decode(clip["data"]), clip["format"])
            x = resample(to_mono(decoded.samples), decoded.sample_rate_hz, 16000)
            text = recognizer.transcribe(x).text or "(no speech)"
        elif args.mode == "transcribe":
            text = "(no audio)"
        else:
            # Answers from the question alone: a fixed pick per question, whatever the clip.
            options = ["three", "the first one", "yes", "440 Hz", "left", "male", "rising"]
            text = options[int(hashlib.sha256(question.encode()).hexdigest(), 16) % len(options)]
        record(rid, 200, t0, start_ns)
        headers["Server-Timing"] = f"model;dur={(time.perf_counter() - t0) * 500:.3f}"
        return web.json_response({"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()),
                                  "model": args.model_name,
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": None}],
                                  "usage": {"prompt_tokens": 0, "completion_tokens": 3, "total_tokens": 3}},
                                 headers=headers)

    async def ready(_: web.Request) -> web.Response:
        return web.json_response({"status": "ready", "degraded": False})

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": args.model_name, "object": "model", "created": 0,
                                                              "owned_by": "stub", "trtmc": {"streaming": True}}]})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/health/ready", ready),
                    web.get("/health/live", ready), web.get("/v1/models", models)])
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    web.run_app(app, host=args.host, port=args.port, print=None, handle_signals=True)


if __name__ == "__main__":
    main()
