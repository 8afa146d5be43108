"""What the soak's verdicts judge: `SoakEvidence`, a frozen snapshot that `judge_soak` takes whole."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import msgspec

from orchestrator.events import AiperfRunFact, RestartFact, ServerExitFact, WindowStats
from orchestrator.judge.generations import Generation
from orchestrator.soak.pauses import HostPause
from orchestrator.soak.ratios import ItemRatioSeries
from orchestrator.soak.samples import SampleSeries

__all__ = ["FirstPass", "SoakEvidence"]


class FirstPass(msgspec.Struct, frozen=True, kw_only=True):
    """The load's first pass over its input: `requests` requests (each input row once), ended at `end_ns`
    (wall clock: the latest answer when the last row was first answered; None while it goes on)."""

    requests: int
    end_ns: int | None = None


# Taken at a look and judged at once (judge_soak is pure and synchronous): the series it holds are the
# collector's own, read before the collector's next event, so no copy is made of hours of samples.
class SoakEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the soak's verdicts judge at one look (see judge_soak for how each is used)."""

    # The closed windows, in any order (judged by index).
    windows: Sequence[WindowStats] = ()
    # The server's unplanned ends and its restarts (soak.supervision's facts).
    exits: Sequence[ServerExitFact] = ()
    restarts: Sequence[RestartFact] = ()
    # Windows a stop (SIGINT/SIGTERM) cut short: reported, not judged for errors.
    cut_short: Collection[str] = frozenset()
    # The AIPerf runs that have ended, the ones still going (", "-joined), and those the stop ended.
    runs: Sequence[AiperfRunFact] = ()
    running: str = ""
    stopped: Collection[str] = frozenset()
    # Every memory sample by verdict; None judges memory on the windows' medians instead.
    samples: Mapping[str, SampleSeries] | None = None
    # The load's span so far (wall-clock ns): its first request to the last closed window's end.
    load_span_ns: tuple[int, int] | None = None
    # Each request's latency over its item's baseline, by timing source; None judges per-window medians.
    ratios: Mapping[str, ItemRatioSeries] | None = None
    first_pass: FirstPass | None = None
    # Each handover's name, gap (s) and its end (wall-clock ns): window_gap judges them as cuts.
    handovers: Sequence[tuple[str, float | None, int | None]] = ()
    # AIPerf's samples by process generation; two or more judge aiperf_rss per generation.
    aiperf_generations: Sequence[Generation] = ()
    host_pauses: Sequence[HostPause] = ()
