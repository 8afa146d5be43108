"""A tiny aqbench-like command for signal tests: open a run, supervise the server, wait to be signalled.

argv: CONFIG RUN_DIR MODE where MODE is `tg` (run.tg.start(supervise, ...)) or `cm` (supervised(...)).
Prints `READY <server pid>` once the server is ready.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from adapters.server_kinds import server_parts
from orchestrator.config import load_config
from orchestrator.run import Interrupt, open_run, run_main
from orchestrator.supervision.supervisor import ServerSpec, supervise, supervised


async def body(interrupt: Interrupt) -> int:
    cfg = load_config(sys.argv[1])
    mode = sys.argv[3]
    async with open_run(cfg, command="supervise-test", argv=sys.argv, interrupt=interrupt,
                        run_dir=Path(sys.argv[2])) as run:
        spec = ServerSpec.from_config(cfg, cfg.models[0], run.run_dir, parts=server_parts(cfg.server.kind))
        if mode == "tg":
            handle = await run.tg.start(supervise, spec, run.bus)
            print(f"READY {handle.pid}", flush=True)
            await anyio.sleep_forever()
        async with supervised(spec, run.bus) as handle:
            print(f"READY {handle.pid}", flush=True)
            await anyio.sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(body))
