"""The embedded reference audio-QA server: trtmc-server's HTTP contract plus audio, over a
cascade engine (Silero VAD, numpy signal analysis, Whisper tiny.en) that answers from the audio."""

from adapters.reference.engine import ENGINE_NAME, Engine, EngineAnswer
from adapters.reference.serve import add_server_arguments, main, serve, settings_from_args
from adapters.reference.worker import run_worker

__all__ = ["ENGINE_NAME", "Engine", "EngineAnswer", "add_server_arguments", "main", "run_worker",
           "serve", "settings_from_args"]
