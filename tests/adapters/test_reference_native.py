"""The native side: the JSON-lines worker and `aqbench reference answer` give the HTTP server's answers."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.request

from _reference_server import DATASET, REPO, Server
from server_env import warmed_env

ITEMS = [  # (file, format, question): signal-only and speech items, every container
    ("meeting.wav", "wav", "At what hour is the meeting?"),
    ("folder.flac", "flac", "What colour is the folder?"),
    ("beeps-5.wav", "wav", "How many beeps do you hear?"),
    ("platform.ogg", "ogg", "Which platform does the train leave from?"),
    ("sister.mp3", "mp3", "What is the sister's job?"),
]


def _http_answer(url: str, path, fmt: str, question: str) -> str:
    body = {"model": "ref-test", "messages": [{"role": "user", "content": [
        {"type": "text", "text": question},
        {"type": "input_audio", "input_audio": {"data": base64.b64encode(path.read_bytes()).decode(),
                                                "format": fmt}}]}]}
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["choices"][0]["message"]["content"]


class TestNativeWorker:
    def test_worker_protocol_and_identity_with_http(self, default_server: Server) -> None:
        """The worker says ready (protocol 2, audio_text_to_text), answers path and base64 audio with
        the same text as the HTTP server, reports errors per request, and exits on shutdown."""
        proc = subprocess.Popen([sys.executable, "-m", "adapters.reference", "worker"], cwd=REPO,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=warmed_env())
        try:
            ready = json.loads(proc.stdout.readline())
            assert ready["event"] == "ready" and ready["protocol_version"] == 2
            assert ready["capabilities"] == ["audio_text_to_text"]
            assert ready["warm_up_ms"] > 0  # warmed up before ready, as the server is before its port opens

            def call(msg: dict) -> dict:
                proc.stdin.write(json.dumps(msg) + "\n")
                proc.stdin.flush()
                return json.loads(proc.stdout.readline())

            native = {}
            for i, (name, fmt, q) in enumerate(ITEMS):
                path = DATASET / "audio" / name
                audio = {"path": str(path)} if i % 2 else {
                    "data": base64.b64encode(path.read_bytes()).decode(), "format": fmt}
                out = call({"id": i, "op": "generate", "prompt": q, "audio": audio, "config": {}})
                assert out["id"] == i and out["ok"], out
                assert out["result"]["timing_scope"] == "public_task_call_wall"
                assert out["result"]["model_call_ms"] > 0
                native[name] = out["result"]["text"]
            bad = call({"id": "x", "op": "generate", "prompt": "q", "audio": {"path": "/nonexistent.wav"}})
            assert bad == {"id": "x", "ok": False, "error": {
                "type": "invalid_request_error", "message": "audio.path '/nonexistent.wav': No such file or directory"}}
            assert call({"id": 99, "op": "shutdown"})["ok"]
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        http = {name: _http_answer(default_server.url, DATASET / "audio" / name, fmt, q) for name, fmt, q in ITEMS}
        assert http == native
        assert native["beeps-5.wav"] == "5" and native["folder.flac"] == "blue"

    def test_cli_answer(self):
        """`aqbench reference answer` prints the answer, engine time and audio properties as JSON."""
        out = subprocess.run([sys.executable, "-m", "orchestrator", "reference", "answer", "--audio",
                              str(DATASET / "audio" / "beeps-5.wav"), "--question", "How many beeps?"],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["answer"] == "5" and data["model_call_ms"] > 0
        assert data["audio"]["format"] == "wav" and data["analysis"] == "count_tones"
