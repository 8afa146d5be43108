"""AIPerf's HTTP client with its worker's collector setting, off (AIPerf 0.13.0) and on (aqbench's soaks).

Light, no AIPerf process: in a fresh interpreter each, the collector is set as adapters/aiperf/worker.py
sets it (`settle_gc`), then AIPerf's own `AioHttpClient.post_request` (the call its worker makes per
request, with the per-request aiohttp TraceConfig) sends `--requests` requests, in rounds, to a local
aiohttp server in the same process. Prints, per round, the RSS and the aiohttp TraceConfig objects alive.
The whole-AIPerf figures are bench/aiperf_processes.py's (with and without --stock-gc).

    .venv/bin/python bench/aiperf_worker_gc.py [--requests 1000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = r"""
import asyncio, gc, json, sys
from aiohttp import TraceConfig, web
from adapters.aiperf.worker import settle_gc
from aiperf.transports.aiohttp_client import AioHttpClient

def rss_kib():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:"))

async def main(per_round, rounds):
    async def answer(request):
        await request.read()
        return web.json_response({"choices": [{"message": {"content": "ok"}}]})
    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1/chat/completions"
    client = AioHttpClient(timeout=10)
    await client.post_request(url, b'{"x":1}', {"Content-Type": "application/json"})
    settle_gc(sys.argv[1] == "on")
    for k in range(rounds + 1):
        if k:
            for _ in range(per_round):
                record = await client.post_request(url, b'{"x":1}', {"Content-Type": "application/json"})
                assert record.error is None, record.error
        alive = sum(1 for o in gc.get_objects() if type(o) is TraceConfig)
        print(json.dumps({"requests": k * per_round, "rss_kib": rss_kib(), "trace_configs": alive}), flush=True)
    await client.close()
    await runner.cleanup()

asyncio.run(main(int(sys.argv[2]), int(sys.argv[3])))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1000, help="requests per round")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    print("| collector | requests | RSS (MiB) | TraceConfig alive | KiB per request since 0 |\n|---|---|---|---|---|")
    for mode in ("off", "on"):
        done = subprocess.run([sys.executable, "-c", _CHILD, mode, str(args.requests), str(args.rounds)],
                              capture_output=True, text=True, check=True, timeout=600)
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        base = rows[0]["rss_kib"]
        label = "off (AIPerf 0.13.0)" if mode == "off" else "on (aqbench's soaks)"
        for row in rows:
            per = (row["rss_kib"] - base) / row["requests"] if row["requests"] else 0.0
            print(f"| {label} | {row['requests']} | {row['rss_kib'] / 1024:.1f} | {row['trace_configs']} | {per:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
