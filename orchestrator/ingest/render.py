"""The ingest summary as text for a terminal (or as JSON); formatting only, no computation."""

from __future__ import annotations

import time

import msgspec

from orchestrator.ingest.summary import IngestSummary

__all__ = ["render_summary"]


def _when(ns: int | None) -> str:
    if not ns:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns / 1e9)) + f".{ns % 10**9 // 10**6:03d}Z"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def render_summary(s: IngestSummary, *, as_json: bool = False) -> str:
    """Text (or JSON) for the summary of one ingest."""
    if as_json:
        return msgspec.json.format(msgspec.json.encode(s).decode(), indent=2)
    out = [f"ingested {s.lines} lines -> {s.events} events from {len(s.sources)} inputs"
           f" ({s.bad_lines} bad, {s.filtered} outside --since/--until)"]
    for src in s.sources:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(src.events.items())) or "no events"
        extra = "".join(f", {n} {label}" for n, label in ((src.bad, "bad"), (src.blank, "blank"),
                                                            (src.filtered, "filtered")) if n)
        out.append(f"  {src.path} [{src.format or '?'}]: {src.lines} lines: {kinds}{extra}")
    if s.by_format:
        out.append("events by format: " + ", ".join(f"{k} {n}" for k, n in sorted(s.by_format.items())))
    if s.severities:
        out.append("log severities: " + ", ".join(f"{k} {n}" for k, n in sorted(s.severities.items())))
    out.append(f"time span: {_when(s.first_unix_ns)} .. {_when(s.last_unix_ns)}"
               + (f" ({(s.last_unix_ns - s.first_unix_ns) / 1e9:.3f} s)" if s.first_unix_ns and s.last_unix_ns else ""))
    out.append(f"requests: {s.client_records} client records, {s.server_records} server records"
               f" ({s.duplicate_copies} duplicate copies across inputs ignored)")
    out.append(f"joined: {s.joined} requests, {s.joined_ok} ok"
               + (" (" + ", ".join(f"{k} {n}" for k, n in sorted(s.causes.items())) + ")" if s.causes else ""))
    for half, causes in sorted(s.unmatched.items()):
        out.append(f"unmatched {half} halves: " + ", ".join(f"{k} {n}" for k, n in sorted(causes.items())))
    if s.journal_correlated:
        out.append(f"journal's own joins: {s.journal_correlated}, agreeing with this join: "
                   f"{s.journal_correlated_agreeing}")
    out.append("latency (ms, ok profiling requests)        count     mean      p50      p90      p99")
    for name, st in s.latency_ms.items():
        out.append(f"  {name:<40} {st.count:>5} {_num(st.mean):>8} {_num(st.p50):>8} {_num(st.p90):>8} "
                   f"{_num(st.p99):>8}")
    if s.bad:
        out.append(f"bad lines ({s.bad_lines}{', first ' + str(len(s.bad)) + ' listed' if s.bad_lines > len(s.bad) else ''}):")
        for b in s.bad:
            out.append(f"  {b.path}:{b.line}: {b.cause}: {b.error[:120]}")
    return "\n".join(out)
