"""AIPerf's own count of the requests it sent, per phase, from its log line
`Phase <name> (<kind>) sending complete | sent=N, ...` (AIPerf 0.13.0, timing/phase/runner.py). Pure parsing.
"""

from __future__ import annotations

import re

__all__ = ["parse_sent", "parse_phase_sent", "parse_phase_started", "issued_counts"]

_SENT = re.compile(r"Phase (?P<name>\S+) \((?P<kind>\S+)\) sending complete \| sent=(?P<sent>[\d,]+)")
_STARTED = re.compile(r"Phase (?P<name>\S+) \((?P<kind>\S+)\) started\b")


def parse_sent(text: str) -> tuple[str, int] | None:
    """(phase kind, requests sent) from one AIPerf log line, or None when it is not a sending-complete line."""
    if "sending complete" not in text:
        return None
    match = _SENT.search(text)
    return (match["kind"], int(match["sent"].replace(",", ""))) if match else None


def parse_phase_sent(text: str) -> tuple[str, str, int] | None:
    """(phase name, phase kind, requests sent) from a sending-complete line (a phased run names each phase)."""
    if "sending complete" not in text:
        return None
    match = _SENT.search(text)
    return (match["name"], match["kind"], int(match["sent"].replace(",", ""))) if match else None


def parse_phase_started(text: str) -> str | None:
    """The phase name from AIPerf's `Phase <name> (<kind>) started` line, else None."""
    if ") started" not in text:
        return None
    match = _STARTED.search(text)
    return match["name"] if match else None


# The phase manifest counts the records AIPerf kept (successful + error), so a request AIPerf sent and then dropped
# (it does so with its open requests at SIGINT) is missing from both the manifest and the exports: only the
# sending-complete line still counts it.
def issued_counts(sent: dict[str, int], manifest_phases: object) -> tuple[dict[str, int], dict[str, str]]:
    """What AIPerf issued per phase, and where each count comes from: its log's sent count where the log
    said it, else the manifest's total (records kept), else nothing for that phase."""
    issued, source = dict(sent), dict.fromkeys(sent, "aiperf_log")
    if isinstance(manifest_phases, dict):
        for phase, counts in manifest_phases.items():
            total = counts.get("total") if isinstance(counts, dict) else None
            if phase not in issued and isinstance(total, int):
                issued[phase], source[phase] = total, "phase_manifest"
    return issued, source
