"""The live page's lag through a whole run: reads the page's event stream (/events) as a browser does and notes,
for every frame, how far its newest event lies behind the wall clock (what the page shows as "live lag").

Run beside a run served with --serve: .venv/bin/python bench/live_lag.py http://127.0.0.1:PORT --out lag.jsonl
Writes one JSON line per `--every` seconds (frames, max and p99 lag, reloads) and a summary at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TextIO

import aiohttp
import anyio


async def _follow(url: str, out: TextIO, every_s: float) -> dict[str, float]:
    lags: list[float] = []
    every: list[float] = []
    seq = 0
    reloads = 0
    t_flush = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        # Start from the page's current state, as a browser does: frames replayed from the ring are not lag.
        async with session.get(f"{url}/state") as st:
            seq = int((await st.json())["state"].get("seq", 0))
        while True:
            try:
                async with session.get(f"{url}/events?since={seq}") as resp:
                    event = ""
                    async for raw in resp.content:
                        line = raw.decode().rstrip("\n")
                        if line.startswith("event: "):
                            event = line[7:]
                        elif line.startswith("data: ") and event == "changes":
                            msg = json.loads(line[6:])
                            seq = max(seq, int(msg["seq"]))
                            lag = (time.time_ns() - int(msg["ts_ns"])) / 1e9
                            lags.append(lag)
                            every.append(lag)
                        elif line.startswith("data: ") and event == "reload":
                            reloads += 1
                            async with session.get(f"{url}/state") as st:
                                seq = int((await st.json())["state"].get("seq", seq))
                            break
                        elif line.startswith("data: ") and event == "end":
                            return _summary(lags, reloads)
                        if time.monotonic() - t_flush >= every_s and every:
                            every.sort()
                            out.write(json.dumps({"t": time.time(), "frames": len(every), "max_s": every[-1],
                                                  "p99_s": every[int(0.99 * (len(every) - 1))],
                                                  "reloads": reloads}) + "\n")
                            out.flush()
                            every, t_flush = [], time.monotonic()
            except (aiohttp.ClientError, OSError):
                await anyio.sleep(2.0)
                try:
                    async with session.get(f"{url}/state") as st:
                        await st.read()
                except (aiohttp.ClientError, OSError):
                    return _summary(lags, reloads)  # the page is gone: the run ended


def _summary(lags: list[float], reloads: int) -> dict[str, float]:
    lags.sort()
    if not lags:
        return {"frames": 0, "reloads": reloads}
    return {"frames": len(lags), "median_s": lags[len(lags) // 2], "p99_s": lags[int(0.99 * (len(lags) - 1))],
            "max_s": lags[-1], "over_2s": sum(x > 2.0 for x in lags), "reloads": reloads}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--out", default="live_lag.jsonl")
    p.add_argument("--every", type=float, default=60.0)
    a = p.parse_args()
    with open(a.out, "a", encoding="utf-8") as out:
        summary = anyio.run(_follow, a.url.rstrip("/"), out, a.every)
        out.write(json.dumps({"summary": summary}) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
