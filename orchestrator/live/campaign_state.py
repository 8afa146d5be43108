"""A campaign's live page state from its files as the driver writes them (`campaign.jsonl` and each model's
`models/<name>/events.jsonl`, by the run page's own fold). Incremental: each call reads only the new lines.
Reads the files, never writes; blocks (file reads): callers run it in a worker thread, one at a time."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import msgspec

from orchestrator.base.errors import JournalError
from orchestrator.campaign.events import (
    AnyCampaignEvent,
    AttemptEnded,
    AttemptPlaced,
    CampaignFinished,
    CampaignStarted,
    ModelFinished,
    ModelSubmitted,
)
from orchestrator.live.state import (
    CampaignModelRow,
    Change,
    Counters,
    ModelSeries,
    PageFold,
    PageState,
    VerdictRow,
    WindowRow,
    run_info,
    why_empty,
)
from orchestrator.live.tail import LineTail
from orchestrator.spine.journal import decode_event

__all__ = ["CampaignTail", "changes_between"]

_decode_campaign = msgspec.json.Decoder(AnyCampaignEvent).decode
_ROWS = ("windows", "models", "points", "campaign", "verdicts", "model_latency", "model_memory")
_MODEL_POINTS = 300  # per model and chart: every put resends a model's whole series
_SETS = ("run", "counters", "server", "dropped")


class _ModelTail:
    """One model's journal and the run page's fold of it; a journal replaced by a retry's starts a new fold."""

    def __init__(self, path: Path) -> None:
        self.lines = LineTail(path)
        self.fold = PageFold()

    def read(self) -> int:
        """Fold the new lines; how many there were."""
        n = 0
        for number, line in self.lines.lines():
            if self.lines.replaced:  # the driver moved the lost attempt's journal aside: start over
                self.lines.replaced, self.fold = False, PageFold()
            try:
                self.fold.add(decode_event(line))
            except ValueError as exc:  # msgspec's DecodeError and ValidationError
                raise JournalError(f"{self.lines.path}: line {number} does not decode: {exc}") from exc
            n += 1
        return n


class CampaignTail:
    """`state()` folds what the campaign's files gained since the last call. Its `seq` counts the lines folded
    (both kinds), so it only grows: the page's changes and its state agree on it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._journal = LineTail(folder / "campaign.jsonl")
        self._run = run_info(command="campaign", unit="models")
        self._rows: dict[str, CampaignModelRow] = {}
        self._models: dict[str, _ModelTail] = {}
        self._nodes: dict[str, str] = {}
        self.seq = 0

    def state(self) -> PageState:
        """The page as of every whole line written now. Raises JournalError naming a line that does not decode."""
        for number, line in self._journal.lines():
            try:
                event = _decode_campaign(line)
            except ValueError as exc:
                raise JournalError(f"{self._journal.path}: line {number} does not decode: {exc}") from exc
            self.seq += 1
            self._on(event)
        for name in self._rows:
            tail = self._models.setdefault(name, _ModelTail(self.folder / "models" / name / "events.jsonl"))
            self.seq += tail.read()
        return self._page()

    # ------------------------------------------------------------------------------- campaign.jsonl

    def _on(self, ev: AnyCampaignEvent) -> None:
        if isinstance(ev, CampaignStarted):
            for n in ev.nodes:
                self._nodes[n.node_id] = n.hostname or n.address or n.node_id[:12]
            for name in ev.skipped:
                self._rows.setdefault(name, CampaignModelRow(name=name, state="final before --resume"))
            for name in ev.models:
                self._rows[name] = CampaignModelRow(name=name)
            # A resumed campaign runs again: the first start names it, the last says what runs now.
            self._run = msgspec.structs.replace(
                self._run, run_id=self._run.run_id or ev.campaign_id, started_unix_ns=self._run.started_unix_ns
                or ev.unix_ns, status="running", reason="", finished_unix_ns=0)
        elif isinstance(ev, ModelSubmitted):
            self._row(ev.model, attempt=ev.attempt, state="submitted" if ev.attempt == 1 else f"retry {ev.attempt - 1}",
                      reason="")
        elif isinstance(ev, AttemptPlaced):
            # The host's name first: the page hides IP addresses as publish does.
            node = ev.hostname or self._nodes.get(ev.node_id) or ev.node_address or ev.node_id[:12]
            self._row(ev.model, attempt=ev.attempt, node=node, state="running")
        elif isinstance(ev, AttemptEnded) and ev.retry:
            self._row(ev.model, state="node lost, retrying", reason=ev.reason[:300])
        elif isinstance(ev, ModelFinished):
            self._row(ev.model, state=ev.status, reason=ev.reason[:300])
        elif isinstance(ev, CampaignFinished):
            self._run = msgspec.structs.replace(self._run, status=ev.status, reason=ev.reason,
                                                finished_unix_ns=ev.unix_ns)

    def _row(self, name: str, **fields: object) -> None:
        row = self._rows.get(name) or CampaignModelRow(name=name)
        self._rows[name] = msgspec.structs.replace(row, **fields)

    # ------------------------------------------------------------------------------- the page

    def _page(self) -> PageState:
        rows, verdicts, windows, latency, memory = [], [], [], [], []
        by_cause: dict[str, int] = {}
        totals = dict.fromkeys(("issued", "ok", "errors", "warmup", "unmatched", "in_flight"), 0)
        for name, row in self._rows.items():
            tail = self._models.get(name)
            if tail is None:
                rows.append(row)
                continue
            st = tail.fold.state()
            c = st.counters
            for key in totals:
                totals[key] += getattr(c, key)
            for cause, n in c.by_cause.items():
                by_cause[cause] = by_cause.get(cause, 0) + n
            outcomes: dict[str, int] = {}
            for v in st.verdicts:
                outcomes[v.outcome] = outcomes.get(v.outcome, 0) + 1
            mine = next((m for m in st.models if m.name == name), None)
            rows.append(msgspec.structs.replace(
                row, stage=mine.stage if mine else row.stage, issued=c.issued, ok=c.ok, errors=c.errors,
                restarts=st.server.restarts, verdicts=outcomes))
            # On the campaign's clock: each model's series starts at its own journal's RunStarted.
            shift = (st.run.started_unix_ns - self._run.started_unix_ns) / 1e9 \
                if st.run.started_unix_ns and self._run.started_unix_ns else 0.0
            latency.append(ModelSeries(name=name, points=_thin(
                [(round(p.t_s + shift, 3), p.client_ms) for p in st.latency if p.client_ms is not None])))
            memory.append(ModelSeries(name=name, points=_thin(
                [(round(p.t_s + shift, 3), p.rss_bytes / 2**20) for p in st.memory if p.role == "server"])))
            verdicts += [v if v.name.startswith(name) else _named(v, f"{name} {v.name}") for v in st.verdicts]
            windows += [w if w.name.startswith(name) else _named(w, f"{name} {w.name}") for w in st.windows]
        done = sum(r.state not in ("queued", "submitted", "running", "node lost, retrying")
                   and not r.state.startswith("retry") for r in rows)
        run = msgspec.structs.replace(self._run, done=done, total=len(rows))
        run = msgspec.structs.replace(run, empty=why_empty(run))
        return PageState(seq=self.seq, run=run, counters=msgspec.structs.replace(Counters(by_cause=by_cause), **totals),
                         campaign=rows, verdicts=verdicts, windows=windows, model_latency=latency,
                         model_memory=memory)


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most _MODEL_POINTS of `points`, evenly spaced, the last always kept (the newest value)."""
    if len(points) <= _MODEL_POINTS:
        return points
    step = len(points) / _MODEL_POINTS
    return [points[int(i * step)] for i in range(_MODEL_POINTS - 1)] + [points[-1]]


_Named = TypeVar("_Named", VerdictRow, WindowRow)


def _named(row: _Named, name: str) -> _Named:
    return msgspec.structs.replace(row, name=name)


def changes_between(old: PageState, new: PageState) -> list[Change]:
    """What a page holding `old` must apply to show `new`: sections that differ are set, rows that differ are
    put (a row never leaves the page): a model's chart series is one row, resent whole when it changed."""
    out = [Change(seq=new.seq, op="set", section=s, value=getattr(new, s)) for s in _SETS
           if getattr(old, s) != getattr(new, s)]
    for section in _ROWS:
        before = {r.name: r for r in getattr(old, section)}
        out += [Change(seq=new.seq, op="put", section=section, value=r) for r in getattr(new, section)
                if before.get(r.name) != r]
    return out
