"""`aqbench serve-reference`: run the embedded reference audio-QA server in the foreground."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from orchestrator.base.errors import UsageError

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve-reference", help="run the embedded reference audio-QA server",
        description="Serve trtmc-server's HTTP contract plus input_audio over the "
        "reference cascade engine. Exit 0 when SIGINT/SIGTERM drained it, 2 on a usage error (a bad flag or "
        "value), 3 when the server itself failed (its port taken, the engine would not load).")
    parse = p.parse_known_args

    def add_flags_then_parse(args: Sequence[str] | None = None,
                             namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        # The server's flags live beside the server, whose package loads the engine (faster-whisper,
        # aiohttp: ~1.5 s). Every other command builds this parser too, so they are added only when
        # this command is the one being parsed (argparse hands a subcommand's args to its parser).
        from adapters.reference.serve import add_server_arguments

        del p.parse_known_args  # back to the class's method: flags are added once
        add_server_arguments(p)
        return parse(args, namespace)

    p.parse_known_args = add_flags_then_parse  # type: ignore[method-assign,assignment]
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: the server's package loads the engine (faster-whisper, aiohttp: ~1.5 s), and
    # asyncio would cost every other command's start 0.05 s.
    import asyncio

    from adapters.reference.serve import gpu_from_args, heap_from_args, serve, settings_from_args

    try:
        settings = settings_from_args(args)
        heap = heap_from_args(args)
        gpu = gpu_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return asyncio.run(serve(settings, cpu_threads=args.cpu_threads, heap=heap, gpu=gpu,
                             speech_models=not args.no_speech_models))
