"""The reference server as a real subprocess: routes, errors, request ids, records, busy, drain, faults."""

from __future__ import annotations

import base64
import json
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _reference_server import DATASET, Server, reference_server, shared_reference_server, wait_ready

MODEL = "ref-test"
MEETING = DATASET / "audio" / "meeting.wav"


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _chat_body(question: str = "On which day of the week is the meeting?", audio: Path | None = MEETING,
               fmt: str = "wav", **extra: object) -> dict:
    content: list[dict] = [{"type": "text", "text": question}]
    if audio is not None:
        content.append({"type": "input_audio", "input_audio": {"data": _b64(audio), "format": fmt}})
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}


def _post(url: str, body: object, headers: dict[str, str] | None = None,
          raw: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _records(server) -> list[dict]:
    return [json.loads(line) for line in server.records.read_text().splitlines()]


def _record(server, request_id: str) -> dict:
    """The record of one request; it is appended just after the response ends, so wait briefly."""
    deadline = time.monotonic() + 5
    while True:
        found = [r for r in _records(server) if r["request_id"] == request_id]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, f"{len(found)} records for {request_id}"
            return found[0]
        time.sleep(0.05)


def _wait_until(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll `check` until it holds; fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {check}"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, shared_processes: set[int]) -> Iterator[Server]:
    """One server for the tests that only send requests and read their own records (by request id)."""
    with shared_reference_server(tmp_path_factory.mktemp("server"), shared_processes, "--replicas", "2",
                                 "--max-body-bytes", "2000000") as s:
        yield s


class TestRoutes:
    def test_health_models_metrics(self, server):
        """Health, model listing and Prometheus metrics answer in trtmc-server's shapes."""
        assert json.loads(_get(server.url + "/health/live")[2]) == {"status": "live"}
        assert json.loads(_get(server.url + "/health/ready")[2]) == {"status": "ready", "degraded": False}
        models = json.loads(_get(server.url + "/v1/models")[2])["data"]
        assert [m["id"] for m in models] == [MODEL]
        assert models[0]["capabilities"] == ["audio_text_to_text"]
        assert "whisper-tiny.en" in models[0]["engine"]["speech_model"]
        _post(server.url, _chat_body())
        text = _get(server.url + "/metrics")[2].decode()
        assert "aqbench_reference_ready 1" in text
        assert 'aqbench_reference_requests_total{route="/v1/chat/completions",status="200"}' in text
        assert "aqbench_reference_request_duration_ms_count" in text
        status, _, out = _get(server.url + "/v2/nothing")
        assert status == 404 and json.loads(out)["error"]["code"] == "not_found"

    def test_chat_answers_from_audio_with_timing_and_id(self, server):
        """A chat request with input_audio is answered from the clip; id echoed; Server-Timing set."""
        status, headers, body = _post(server.url, _chat_body(), {"X-Request-ID": "abc-1"})
        assert status == 200, body
        answer = json.loads(body)
        assert answer["choices"][0]["message"]["content"] == "thursday"
        assert headers["x-request-id"] == "abc-1"
        assert headers["Server-Timing"].startswith("model;dur=")
        rec = _record(server, "abc-1")
        assert rec["status"] == 200 and rec["model"] == MODEL and rec["replica"].startswith("replica-")
        assert rec["timing_scope"] == "public_task_call_wall" and rec["streaming"] == "none"
        assert rec["audio"] == {"format": "wav", "sample_rate_hz": 16000, "channels": 1,
                                "seconds": pytest.approx(rec["audio"]["seconds"]),
                                "bytes": MEETING.stat().st_size}
        assert rec["handler_ms"] >= rec["worker_roundtrip_ms"] >= rec["model_call_ms"] > 0
        assert float(headers["Server-Timing"].split("=")[1]) == pytest.approx(rec["model_call_ms"], abs=0.01)
        assert rec["start_unix_ns"] < rec["end_unix_ns"]
        # stream:true gives one content chunk, a usage chunk, then [DONE]; audio_url data URLs work.
        sse = _chat_body()
        url = "data:audio/wav;base64," + _b64(MEETING)
        sse["messages"][0]["content"][1] = {"type": "audio_url", "audio_url": {"url": url}}
        sse.update(stream=True, stream_options={"include_usage": True})
        status, headers, raw = _post(server.url, sse, {"X-Request-ID": "sse-1"})
        assert status == 200 and headers["x-request-id"] == "sse-1"
        events = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        assert chunks[0]["choices"][0]["delta"]["content"] == "thursday"
        assert chunks[1]["usage"]["completion_tokens"] == 1
        assert _record(server, "sse-1")["streaming"] == "buffered"

    def test_openai_client_input_audio(self, server):
        """The official openai client sends input_audio and reads the answer."""
        import openai

        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        try:
            out = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": [
                {"type": "text", "text": "How many beeps do you hear?"},
                {"type": "input_audio", "input_audio": {"data": _b64(DATASET / "audio" / "beeps-5.wav"),
                                                        "format": "wav"}}]}], temperature=0)
        finally:
            client.close()
        assert out.choices[0].message.content == "5"


ERRORS = [
    ("malformed JSON", None, b"{not json", 400, "invalid_request", "request body is not valid JSON"),
    ("unknown field", {**_chat_body(audio=None), "frobnicate": 1}, None, 400, "invalid_request",
     "unknown field 'frobnicate'"),
    ("unsupported parameter", {**_chat_body(audio=None), "tools": []}, None, 400,
     "unsupported_parameter", "parameter 'tools' is not supported"),
    ("two user messages", {"model": MODEL, "messages": [{"role": "user", "content": "a"},
                                                        {"role": "user", "content": "b"}]}, None,
     400, "invalid_request", "messages must be one user message"),
    ("bad base64", {"model": MODEL, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "q"}, {"type": "input_audio", "input_audio": {"data": "@@@", "format": "wav"}}]}]},
     None, 400, "invalid_request", r"messages\[0\].content\[1\].input_audio.data is not valid base64"),
    ("unsupported format", {"model": MODEL, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "q"}, {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "aac"}}]}]},
     None, 400, "unsupported_audio_format", "format 'aac' is not supported; supported: wav, mp3, flac, ogg"),
    ("undecodable audio", {"model": MODEL, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "q"}, {"type": "input_audio", "input_audio": {
            "data": base64.b64encode(b"RIFF not really a wave file").decode(), "format": "wav"}}]}]},
     None, 400, "invalid_audio", "audio declared as wav .* could not be decoded"),
    ("wrong container", _chat_body(audio=DATASET / "audio" / "folder.flac", fmt="wav"), None, 400,
     "invalid_audio", "audio declared as wav is a flac container"),
    ("two audio parts", {"model": MODEL, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "q"}] + [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}] * 2}]},
     None, 400, "invalid_request", "at most one audio part per request, got 2"),
    ("unknown model", {**_chat_body(audio=None), "model": "nope"}, None, 404, "model_not_found",
     "model 'nope' is not served here; available: 'ref-test'"),
    ("too large", None, b"x" * 2_100_000, 413, "content_too_large", "exceeds --max-body-bytes 2000000"),
]


class TestErrors:
    def test_errors(self, server, tmp_path):
        """Each bad request gets trtmc-server's error shape with a precise message and a record; a
        too-long clip is refused with its length; the server keeps serving afterwards."""
        import re

        for name, body, raw, status, code, message in ERRORS:
            rid = "err-" + name.replace(" ", "-")
            got, headers, out = _post(server.url, body, {"X-Request-ID": rid}, raw=raw)
            err = json.loads(out)["error"]
            assert (got, err["code"]) == (status, code), (name, err)
            assert set(err) == {"message", "type", "param", "code"}
            assert re.search(message, err["message"]), (name, err["message"])
            assert headers["x-request-id"] == rid
            rec = _record(server, rid)
            assert rec["status"] == status and rec["error_code"] == code
        self._too_long_audio(server, tmp_path)
        assert _post(server.url, _chat_body())[0] == 200

    def _too_long_audio(self, server, tmp_path):
        """Audio longer than --max-audio-duration (60 s) is refused with its length in the message."""
        import numpy as np
        import soundfile as sf

        path = tmp_path / "long.flac"
        sf.write(path, np.zeros(8000 * 61, dtype=np.float32), 8000, format="FLAC")
        status, _, out = _post(server.url, _chat_body(audio=path, fmt="flac"))
        assert status == 400
        assert json.loads(out)["error"]["message"].endswith("audio is 61.00 s long; the limit is 60 s")

    def test_request_ids(self, server):
        """Invalid or repeated X-Request-ID is a 400 carrying a generated id; absent ids are made up."""
        status, headers, out = _post(server.url, _chat_body(audio=None), {"X-Request-ID": "-bad id"})
        assert status == 400 and "invalid X-Request-ID header" in json.loads(out)["error"]["message"]
        assert headers["x-request-id"].startswith("req-")
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.putrequest("GET", "/health/live")
        conn.putheader("X-Request-ID", "a1")
        conn.putheader("X-Request-ID", "a2")
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 400 and resp.getheader("x-request-id").startswith("req-")
        assert "repeated" in json.loads(resp.read())["error"]["message"]
        conn.close()
        status, headers, _ = _post(server.url, _chat_body(audio=None, question="What is said?"))
        assert headers["x-request-id"].startswith("req-")



class TestBusyAndDrain:
    def test_busy_then_drain(self, tmp_path):
        """One replica busy -> 429 server_busy with Retry-After: 1; SIGTERM drains: the running request
        finishes 200, new ones get 503 server_draining, and the process exits 0; the slowed request's record
        says so."""
        with reference_server(tmp_path, "--replicas", "1", "--fault-latency-ms", "2500") as s:
            results: dict[str, tuple] = {}

            def slow() -> None:
                results["slow"] = _post(s.url, _chat_body(), {"X-Request-ID": "slow-1"})

            t = threading.Thread(target=slow)
            t.start()
            _wait_until(lambda: "aqbench_reference_busy_replicas 1" in _get(s.url + "/metrics")[2].decode())
            status, headers, out = _post(s.url, _chat_body(), {"X-Request-ID": "busy-1"})
            assert status == 429 and headers["Retry-After"] == "1"
            assert json.loads(out)["error"] | {"message": ""} == {"message": "", "type": "rate_limit_error", "param": None,
                                                              "code": "server_busy"}
            s.proc.send_signal(signal.SIGTERM)
            _wait_until(lambda: _get(s.url + "/health/ready")[0] == 503)  # draining
            status, _, out = _post(s.url, _chat_body(audio=None), {"X-Request-ID": "late-1"})
            assert status == 503 and json.loads(out)["error"]["code"] == "server_draining"
            assert _get(s.url + "/health/ready")[0] == 503
            t.join(30)
            assert results["slow"][0] == 200
            assert s.proc.wait(timeout=30) == 0
            assert _record(s, "slow-1")["model_call_ms"] >= 2500
            assert (_record(s, "busy-1")["status"], _record(s, "late-1")["status"]) == (429, 503)
            # The record says which requests the server slowed, and by how much.
            assert (_record(s, "slow-1")["fault_latency_ms"], _record(s, "late-1")["fault_latency_ms"]) == (2500.0, 0.0)


class TestFaults:
    def test_error_rate_and_crash(self, tmp_path):
        """--fault-error-rate 0.5 fails every second request with 500; --fault-crash-after 4 kills the
        process when the fifth arrives."""
        with reference_server(tmp_path, "--fault-error-rate", "0.5", "--fault-crash-after", "4") as s:
            statuses = [_post(s.url, _chat_body(audio=None, question="What is said?"))[0] for _ in range(4)]
            assert statuses == [200, 500, 200, 500]
            with pytest.raises((ConnectionError, urllib.error.URLError, OSError)):
                _post(s.url, _chat_body(audio=None))
            assert s.proc.wait(timeout=10) == 70

    def test_worker_crash_keeps_the_server_up_degraded_then_not_ready(self, tmp_path):
        """--fault-worker-crash-after 1 with two replicas: as trtmc-server when a worker dies, the server
        stays up: 503 worker_crashed, readiness degraded, then 503 not_ready once no replica is left."""
        with reference_server(tmp_path, "--replicas", "2", "--fault-worker-crash-after", "1") as s:
            body = _chat_body(audio=None, question="What is said?")
            assert _post(s.url, body, {"X-Request-ID": "ok-1"})[0] == 200
            status, _, out = _post(s.url, body, {"X-Request-ID": "crash-1"})
            assert status == 503 and json.loads(out)["error"]["code"] == "worker_crashed"
            ready = _get(s.url + "/health/ready")
            assert ready[0] == 200 and json.loads(ready[2]) == {"status": "ready", "degraded": True}
            assert _post(s.url, body, {"X-Request-ID": "crash-2"})[0] == 503
            ready = _get(s.url + "/health/ready")
            assert ready[0] == 503 and json.loads(ready[2])["reason"] == "every replica exited"
            status, _, out = _post(s.url, body, {"X-Request-ID": "after-1"})
            assert status == 503 and json.loads(out)["error"]["code"] == "worker_unavailable"
            assert s.proc.poll() is None  # the process is still up
            assert [(_record(s, r)["status"], _record(s, r)["error_code"]) for r in ("crash-1", "after-1")] == [
                (503, "worker_crashed"), (503, "worker_unavailable")]
            s.proc.send_signal(signal.SIGINT)
            assert s.proc.wait(timeout=20) == 0

    def test_startup_delay_keeps_port_closed(self, tmp_path):
        """With --fault-startup-delay the port refuses connections until the engine is loaded."""
        with reference_server(tmp_path, "--fault-startup-delay", "2", wait=False) as s:
            _wait_until(lambda: " reference startup_delay " in s.stderr.read_text())  # running, in its delay
            with pytest.raises(urllib.error.URLError):
                urllib.request.urlopen(s.url + "/health/live", timeout=1)
            wait_ready(s)
            s.proc.send_signal(signal.SIGINT)
            assert s.proc.wait(timeout=20) == 0
