"""One module per `aqbench` subcommand: `register(subparsers)` adds it, `run(args)` does it.

Modules here only parse arguments and import the heavy parts inside `run`, so `--help` stays fast.
"""

__all__: list[str] = []
