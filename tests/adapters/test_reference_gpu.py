"""The reference server's GPU options (a worker child holding device memory) and its engine without speech models."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from adapters.media import decode_audio, encode_wav
from adapters.reference.engine import NO_SPEECH_MODELS_ANSWER, Engine
from adapters.server.sampler import PsutilSampler

pytestmark = pytest.mark.inprocess

HAS_LIBRARY = any(importlib.util.find_spec(name) is not None for name in ("torch", "cupy"))


def _gpu_visible() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount()) > 0
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return False


def _beeps(n: int, rate: int = 16000) -> bytes:
    """`n` 1 kHz beeps of 0.2 s, 0.3 s apart."""
    t = np.arange(int(0.2 * rate)) / rate
    beep = 0.5 * np.sin(2 * np.pi * 1000 * t)
    gap = np.zeros(int(0.3 * rate))
    return encode_wav(np.concatenate([np.concatenate([gap, beep]) for _ in range(n)] + [gap]), rate)


class TestWithoutSpeechModels:
    def test_signal_questions_are_answered_and_speech_ones_refused_by_name(self) -> None:
        """An engine built without the VAD and Whisper counts beeps, and answers a speech question with the
        sentence naming --no-speech-models."""
        engine = Engine(speech_models=False)
        audio = decode_audio(_beeps(3), "wav")
        assert engine.speech_model == "none (--no-speech-models)"
        assert engine.answer(audio, "How many times does the tone sound?").text.split()[0].strip(".") in ("3", "three")
        assert engine.answer(audio, "What does the speaker say?").text == NO_SPEECH_MODELS_ANSWER


@pytest.mark.skipif(HAS_LIBRARY, reason="torch or cupy is installed here")
class TestWithoutAGpuLibrary:
    def test_gpu_options_exit_2_with_the_reason(self) -> None:
        """--gpu-ballast-mib where neither torch nor cupy is installed: exit 2 before the engine loads, naming
        the flag and the fix."""
        done = subprocess.run([sys.executable, "-m", "adapters.reference", "--model-name", "m", "--port", "0",
                               "--gpu-ballast-mib", "64", "--fault-gpu-leak-mib", "1"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2
        assert ("reference: GPU options cannot run here: --gpu-ballast-mib, --fault-gpu-leak-mib: no GPU library: "
                "neither torch nor cupy is installed") in done.stderr

    def test_the_worker_child_names_its_error_and_starts_without_a_warning(self) -> None:
        """The child, started as GpuWorker starts it, says why it cannot hold memory on its first line and exits
        2; its module is not one the package imports, so runpy warns of nothing (it did on a GPU host)."""
        done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "adapters.reference.gpu_child",
                               "--library", "torch", "--ballast-mib", "64"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stdout.startswith("error torch: ModuleNotFoundError"), done.stdout
        assert "RuntimeWarning" not in done.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not (HAS_LIBRARY and _gpu_visible()), reason="needs an NVIDIA GPU and torch or cupy")
class TestOnAGpu:
    def test_the_worker_holds_the_ballast_and_keeps_more_per_request(self) -> None:
        """The server's tree holds the 256 MiB ballast (plus a CUDA context) in its worker child, and 16 MiB
        more after each chat request."""
        proc = subprocess.Popen([sys.executable, "-m", "adapters.reference", "--model-name", "m", "--port", "0",
                                 "--no-speech-models", "--no-warm-up", "--gpu-ballast-mib", "256",
                                 "--fault-gpu-leak-mib", "16"], stderr=subprocess.PIPE, text=True)
        sampler = PsutilSampler()
        try:
            port = 0
            deadline = time.monotonic() + 120
            while not port and time.monotonic() < deadline:
                line = proc.stderr.readline() if proc.stderr else ""
                if found := re.search(r" ready .*port=(\d+)", line):
                    port = int(found.group(1))
            assert port, "the server never said ready"
            before = sampler.sample(proc.pid)
            for _ in range(4):
                body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Say hello."}]}).encode()
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
                urllib.request.urlopen(req, timeout=30).read()
            after = before
            while time.monotonic() < deadline:
                after = sampler.sample(proc.pid)
                if after and before and (after.gpu_memory_bytes or 0) - (before.gpu_memory_bytes or 0) >= 64 * 2**20:
                    break
                time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            if proc.stderr:
                proc.stderr.close()
            sampler.close()
        assert before is not None and after is not None and before.children >= 1
        print(f"tree GPU memory {before.gpu_memory_bytes / 2**20:.0f} -> {after.gpu_memory_bytes / 2**20:.0f} MiB "
              f"on {after.gpus[0].name}; identity {after.gpu_identities[0]}")
        assert before.gpu_memory_bytes >= 256 * 2**20
        assert after.gpu_memory_bytes - before.gpu_memory_bytes >= 64 * 2**20
