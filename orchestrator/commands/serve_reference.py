"""`aqbench serve-reference`: run the embedded reference audio-QA server in the foreground."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from adapters.reference.serve import add_server_arguments

    p = sub.add_parser("serve-reference", help="run the embedded reference audio-QA server",
                       description="Serve trtmc-server's HTTP contract plus input_audio over the "
                       "reference cascade engine. SIGINT/SIGTERM drain and exit 0.")
    add_server_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from adapters.reference.serve import heap_from_args, serve, settings_from_args
    from orchestrator.errors import UsageError

    try:
        settings = settings_from_args(args)
        heap = heap_from_args(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return asyncio.run(serve(settings, cpu_threads=args.cpu_threads, heap=heap))
