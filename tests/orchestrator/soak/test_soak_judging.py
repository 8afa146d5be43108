"""The soak's verdict step: it judges the evidence it is handed, journals each verdict, says at a look which
FAILs decide the soak, and keeps a decided FAIL at the end."""

from __future__ import annotations

from typing import TypeVar

import msgspec
import pytest

from orchestrator.events import Event, ServerExited, SoakLimits, SoakVerdict, SoakWindowClosed, WindowStats
from orchestrator.judge.outcome import FAIL, PASS
from orchestrator.soak.evidence import EvidenceCollector, LoadFacts
from orchestrator.soak.judging import SoakJudge
from orchestrator.soak.load_coverage import GapAllowance
from orchestrator.soak.metric_verdict import MetricVerdict

T0 = 1_800_000_000 * 10**9
S = 10**9


E = TypeVar("E", bound=Event)


class _Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def publish(self, event: E) -> E:
        self.events.append(event)
        return event


def _judge(*, stop_early: bool = True) -> tuple[SoakJudge, EvidenceCollector, _Sink]:
    collector, sink = EvidenceCollector(None), _Sink()  # type: ignore[arg-type]
    collector.observe(msgspec.structs.replace(SoakWindowClosed(window="soak/w0001", index=1, summary=WindowStats(
        window="soak/w0001", index=1, start_unix_ns=T0, end_unix_ns=T0 + 60 * S, issued=10, ok=10)), seq=1))
    collector.last_seq = 1  # as its run() would have it: the look waits for the window closed at seq 1
    return SoakJudge(sink, collector, SoakLimits(), gap_allowance=GapAllowance(), stop_early=stop_early), collector, sink


@pytest.mark.anyio
async def test_a_look_journals_provisional_verdicts_and_returns_what_decides_the_soak() -> None:
    judge, collector, sink = _judge()
    assert await judge.look(LoadFacts(), closed_seq=1, windows_closed=1, decide=True) == []
    provisional = [e for e in sink.events if isinstance(e, SoakVerdict)]
    assert provisional and not any(v.final for v in provisional) and {v.windows_closed for v in provisional} == {1}
    collector.observe(ServerExited(incarnation=1, pid=5, returncode=-9, signal="SIGKILL", ts_ns=T0 + 30 * S))
    decided = await judge.look(LoadFacts(), closed_seq=1, windows_closed=1, decide=True)
    assert [v.metric for v in decided] == ["restarts"] and judge.decided == decided
    # A segment's last window (its load has ended) or --no-stop-early: verdicts journaled, nothing decided.
    assert await _judge()[0].look(LoadFacts(), closed_seq=1, windows_closed=1, decide=False) == []
    assert await _judge(stop_early=False)[0].look(LoadFacts(), closed_seq=1, windows_closed=1, decide=True) == []


@pytest.mark.anyio
async def test_a_final_verdict_that_an_early_stop_decided_stays_a_fail() -> None:
    """The look judged it at a stricter level; the windows after it only cut the load short."""
    judge, _collector, sink = _judge()
    judge.decided = [MetricVerdict(metric="correctness", outcome=FAIL, reason="too many wrong answers")]
    final = {v.metric: v for v in await judge.verdicts(LoadFacts(), closed_seq=1, windows_closed=1, final=True)}
    assert final["correctness"].outcome == FAIL
    assert final["correctness"].reason == "ended the soak early: too many wrong answers"
    assert final["restarts"].outcome == PASS
    journaled = {e.metric: e for e in sink.events if isinstance(e, SoakVerdict)}
    assert journaled["correctness"].final and journaled["correctness"].outcome == FAIL
