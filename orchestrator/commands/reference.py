"""`aqbench reference answer|worker`: the reference engine in-process, without HTTP (the native side)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from orchestrator.base.errors import UsageError

__all__ = ["register", "run_answer", "run_worker"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("reference", help="call the reference engine in-process (no HTTP)",
                       description="Exit 0 when it answered (or the worker ended), 2 on a usage error (an unreadable "
                       "audio file), 3 when aqbench itself failed, 130 when interrupted.")
    rsub = p.add_subparsers(dest="reference_command", metavar="ACTION", required=True)
    a = rsub.add_parser("answer", help="answer one question about one audio file; prints JSON")
    a.add_argument("--audio", required=True, type=Path, help="wav, mp3, flac or ogg file")
    a.add_argument("--question", required=True, help="the question about the audio")
    a.add_argument("--format", default=None, help="audio format (default: the file's extension)")
    a.add_argument("--max-tokens", type=int, default=None, help="cut the answer to N words")
    a.set_defaults(func=run_answer)
    w = rsub.add_parser("worker", help="speak TRTMC's JSON-lines worker protocol on stdin/stdout")
    w.set_defaults(func=run_worker)


def run_answer(args: argparse.Namespace) -> int:
    # Imported here, not at the top: the engine (faster-whisper, ~1.5 s) loads only for this command.
    from adapters.media import AudioDecodeError, decode_audio
    from adapters.reference.engine import Engine

    fmt = (args.format or args.audio.suffix.lstrip(".")).lower()
    try:
        data = args.audio.read_bytes()
    except OSError as exc:
        raise UsageError(f"--audio {args.audio}: cannot read: {exc.strerror}") from None
    try:
        audio = decode_audio(data, fmt)
    except AudioDecodeError as exc:
        raise UsageError(f"--audio {args.audio}: {exc}") from None
    ans = Engine(workers=1).answer(audio, args.question, args.max_tokens)
    print(json.dumps({"answer": ans.text, "model_call_ms": round(ans.model_call_ms, 3),
                      "completion_tokens": ans.completion_tokens, "analysis": ans.kind,
                      "audio": {"format": audio.format, "sample_rate_hz": audio.sample_rate_hz,
                                "channels": audio.channels, "seconds": round(audio.seconds, 6),
                                "bytes": audio.bytes}}))
    return 0


def run_worker(args: argparse.Namespace) -> int:
    # Imported here: the worker's loop and engine load only in the worker process.
    from adapters.reference.worker import main

    del args
    sys.stdout.flush()
    return main([])
