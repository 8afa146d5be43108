"""Reference server inputs: truncated WAV, decode errors without Python reprs, non-JSON bodies, and
finish_reason (null by default as trtmc-server; OpenAI's stop/length with --openai-finish-reason)."""

from __future__ import annotations

import base64
import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _reference_server import DATASET, Server, reference_server

from adapters.media import AudioDecodeError, decode_audio

MODEL = "ref-test"
BEEPS = DATASET / "audio" / "beeps-5.wav"


def _body(question: str, audio: bytes | None, **extra: object) -> bytes:
    content: list[dict] = [{"type": "text", "text": question}]
    if audio is not None:
        content.append({"type": "input_audio", "input_audio": {"data": base64.b64encode(audio).decode(),
                                                               "format": "wav"}})
    return json.dumps({"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}).encode()


def _post(url: str, data: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
    req = urllib.request.Request(url + "/v1/chat/completions", data=data, method="POST",
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _stream_events(raw: bytes) -> list[dict]:
    lines = [line[len(b"data: "):] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    assert lines[-1] == b"[DONE]"
    return [json.loads(x) for x in lines[:-1]]


class TestDecode:
    def test_a_wav_cut_short_is_refused_as_truncated(self) -> None:
        """libsndfile decodes a cut WAV silently; the data chunk's declared size shows it is cut."""
        with pytest.raises(AudioDecodeError, match=r"truncated: its data chunk declares \d+ bytes but only 956"):
            decode_audio(BEEPS.read_bytes()[:1000], "wav")
        assert decode_audio(BEEPS.read_bytes(), "wav").frames > 0

    def test_undecodable_bytes_name_no_python_object(self) -> None:
        with pytest.raises(AudioDecodeError) as err:
            decode_audio(b"RIFF" + b"\0" * 40, "wav")
        assert "object at 0x" not in str(err.value) and "BytesIO" not in str(err.value)
        assert "could not be decoded" in str(err.value)


def _stop(server) -> None:
    server.proc.send_signal(signal.SIGINT)
    assert server.proc.wait(timeout=20) == 0


class TestServerInputs:
    def test_default_inputs_and_finish_reason_as_trtmc_server(self, default_server: Server) -> None:
        """400 truncated, no repr in a decode error, 415 for text/plain, finish_reason null and no
        finish chunk (trtmc-server's behaviour) unless asked for."""
        server = default_server
        status, out = _post(server.url, _body("How many beeps do you hear?", BEEPS.read_bytes()[:1000]))
        err = json.loads(out)["error"]
        assert status == 400 and err["code"] == "invalid_audio" and "truncated" in err["message"]
        status, out = _post(server.url, _body("q", b"RIFF" + b"\0" * 40))
        assert status == 400 and "object at 0x" not in json.loads(out)["error"]["message"]
        status, out = _post(server.url, _body("How many beeps do you hear?", BEEPS.read_bytes()), "text/plain")
        err = json.loads(out)["error"]
        assert status == 415 and "text/plain" in err["message"] and "application/json" in err["message"]
        status, out = _post(server.url, _body("How many beeps do you hear?", BEEPS.read_bytes()))
        assert status == 200 and json.loads(out)["choices"][0]["finish_reason"] is None
        status, out = _post(server.url, _body("How many beeps do you hear?", BEEPS.read_bytes(), stream=True))
        events = _stream_events(out)
        assert [e["choices"][0]["finish_reason"] for e in events] == [None]

    def test_openai_finish_reason_flag(self, tmp_path: Path) -> None:
        """--openai-finish-reason: "stop" for a whole answer, "length" when max_tokens cut it (with the
        tokens actually sent), and a final stream chunk with an empty delta."""
        with reference_server(tmp_path, "--openai-finish-reason") as server:
            # Without audio, a how-it-sounds question gets a sentence saying there is no audio.
            question = "How many beeps do you hear?"
            status, out = _post(server.url, _body(question, None))
            whole = json.loads(out)
            assert status == 200 and whole["choices"][0]["finish_reason"] == "stop"
            words = len(whole["choices"][0]["message"]["content"].split())
            assert words > 3 and whole["usage"]["completion_tokens"] == words
            status, out = _post(server.url, _body(question, None, max_tokens=3))
            cut = json.loads(out)
            assert cut["choices"][0]["finish_reason"] == "length" and cut["usage"]["completion_tokens"] == 3
            status, out = _post(server.url, _body(question, BEEPS.read_bytes(), stream=True))
            events = _stream_events(out)
            assert [e["choices"][0]["finish_reason"] for e in events] == [None, "stop"]
            assert events[-1]["choices"][0]["delta"] == {}
            _stop(server)
