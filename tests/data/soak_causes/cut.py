"""Cut a soak's journal down to the fixture beside this file: what the reports and the live page fold for the
errors table (run, phases, windows, verdicts, accounting) and a sample of its requests (every status's first 12
failures, the first 24 successes). The run it came from is in this folder's README.md.

    python tests/data/soak_causes/cut.py RUN_DIR/events.jsonl OUT

(OUT: the fixture, `events.jsonl.gz` in this folder.)
"""

from __future__ import annotations

import gzip
import json
import sys

KEEP = {"run_started", "run_finished", "phase_started", "phase_finished", "soak_window_opened", "soak_window_closed",
        "soak_verdict", "accounting_checked", "model_result", "capability_probed", "soak_stopped"}


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    failed: dict[object, int] = {}
    ok = 0
    out = []
    with open(src, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            kind = e.get("kind")
            if kind == "request_correlated":
                if e["ok"]:
                    ok += 1
                    if ok > 24:
                        continue
                else:
                    key = e.get("http_status")
                    failed[key] = failed.get(key, 0) + 1
                    if failed[key] > 12:
                        continue
            elif kind not in KEEP:
                continue
            out.append(line)
    with gzip.open(dst, "wt", encoding="utf-8") as g:
        g.writelines(out)


if __name__ == "__main__":
    main()
