"""The journal's typed details: each variant of a detail union round-trips inside its event, tags are unique,
and dicts of anything remain only in the foreign-JSON fields payloads.FOREIGN_JSON lists."""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import msgspec
import pytest

from orchestrator.events import (
    CAPABILITY_EVIDENCE,
    EVENT_TYPES,
    FOREIGN_JSON,
    PHASE_DETAILS,
    VERDICT_DETAILS,
    AiperfPhase,
    AiperfSettings,
    CapabilityEvidence,
    CapabilityProbed,
    ClientRecord,
    ConditioningEvidence,
    HttpExchange,
    PairAnswers,
    PhaseDetail,
    PhaseFinished,
    PhaseStarted,
    RunAccount,
    SoakLimits,
    SoakPhase,
    SoakVerdict,
    TransportEvidence,
    VerdictDetail,
    verdict_numbers,
)
from orchestrator.events import MemoryDetail as Memory
from orchestrator.reports import RunReport
from orchestrator.reports.soak import SoakReport
from orchestrator.spine.journal import decode_event, encode_event

EVIDENCE = CAPABILITY_EVIDENCE


def _tag(cls: type) -> str:
    tag = cls.__struct_config__.tag  # type: ignore[attr-defined]
    assert isinstance(tag, str), cls
    return tag


@pytest.mark.parametrize("cls", PHASE_DETAILS, ids=lambda c: c.__name__)
def test_every_phase_detail_round_trips_in_its_phase_events(cls: type) -> None:
    """A phase's own detail Struct comes back from the journal as itself, in PhaseStarted and PhaseFinished."""
    for ev in (PhaseStarted(phase="p", detail=cls()), PhaseFinished(phase="p", outcome="passed", detail=cls())):
        back = decode_event(encode_event(ev))
        assert back == ev and type(back.detail) is cls  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", VERDICT_DETAILS, ids=lambda c: c.__name__)
def test_every_verdict_detail_round_trips_in_a_soak_verdict(cls: type) -> None:
    """A soak verdict's detail comes back typed by its kind."""
    ev = SoakVerdict(metric="m", passed=True, outcome="pass", detail=cls())
    back = decode_event(encode_event(ev))
    assert back == ev and type(back.detail) is cls  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", EVIDENCE, ids=lambda c: c.__name__)
def test_every_capability_evidence_round_trips(cls: type) -> None:
    """A capability check's evidence comes back typed by its check, tagged with the check's name."""
    ev = CapabilityProbed(model="m", check=_tag(cls), passed=False, evidence=cls())  # type: ignore[arg-type]
    raw = encode_event(ev)
    assert decode_event(raw) == ev and msgspec.json.decode(raw)["evidence"]["kind"] == ev.check


def test_details_keep_their_values_through_the_journal() -> None:
    """Nested values (settings, limits, pairs, runs, trend numbers) survive the journal unchanged."""
    events = [
        PhaseStarted(phase="aiperf", detail=AiperfPhase(settings=AiperfSettings(requests=12, arms=["audio"]))),
        PhaseStarted(phase="soak", detail=SoakPhase(duration_s=90.0, limits=SoakLimits(max_error_rate=0.5))),
        CapabilityProbed(model="m", check="conditioning", passed=True, evidence=ConditioningEvidence(
            pairs=[PairAnswers(relation="same_clip", first="a", second="b", first_answer=None, passed=True)])),
        CapabilityProbed(model="m", check="transport", passed=False, evidence=TransportEvidence(
            with_audio=HttpExchange(status=400, body='{"error": "no audio"}', request_id="r1"))),
        SoakVerdict(metric="server_rss", passed=False, outcome="fail",
                    detail=Memory(slope=12.5, interval=[9.0, 16.0], limit=8.0, unit="MiB/h", n=7, growth_mib=70.0)),
    ]
    assert [decode_event(encode_event(e)) for e in events] == events


def test_a_client_records_aiperf_run_is_journaled_under_its_old_name() -> None:
    """ClientRecord.aiperf_run is written and read as `window`, so journals from before the rename still fold."""
    line = encode_event(ClientRecord(request_id="r1", aiperf_run="m/aiperf"))
    assert b'"window":"m/aiperf"' in line and b"aiperf_run" not in line
    assert decode_event(line) == ClientRecord(request_id="r1", aiperf_run="m/aiperf")


def test_verdict_numbers_are_the_ones_a_table_shows() -> None:
    """A trend's slope, interval, limit and unit; an error rate's limit; nothing for an accounting detail."""
    from orchestrator.events import AccountingDetail, ErrorRateDetail

    assert verdict_numbers(Memory(slope=1.0, interval=[0.0, 2.0], limit=8.0, unit="MiB/h")) == (
        1.0, [0.0, 2.0], 8.0, "MiB/h")
    assert verdict_numbers(ErrorRateDetail(limit=0.001)) == (None, None, 0.001, "")
    assert verdict_numbers(AccountingDetail(runs=[RunAccount(run="a")])) == (None, None, None, "")
    assert verdict_numbers(None) == (None, None, None, "")


@pytest.mark.parametrize(("union", "alias"), [(PHASE_DETAILS, PhaseDetail), (VERDICT_DETAILS, VerdictDetail),
                                              (EVIDENCE, CapabilityEvidence)], ids=["phase", "verdict", "evidence"])
def test_each_union_tags_its_variants_apart(union: tuple[type, ...], alias: Any) -> None:
    """Every variant of a detail union has its own tag under `kind` (a new variant appends a new tag), and the
    list of variants is the union the journal decodes."""
    assert typing.get_args(alias) == union
    tags = [_tag(c) for c in union]
    assert len(set(tags)) == len(tags) and all(c.__struct_config__.tag_field == "kind" for c in union)  # type: ignore[attr-defined]


def _foreign(cls: type, seen: set[type]) -> set[str]:
    """`Struct.field` of every field of `cls` (and the Structs it holds) whose type holds `Any`."""
    found: set[str] = set()
    if cls in seen:
        return found
    seen.add(cls)
    for f in msgspec.structs.fields(cls):
        kinds = _kinds(f.type)
        if Any in kinds:
            found.add(f"{cls.__name__}.{f.name}")
        for k in kinds:
            if isinstance(k, type) and issubclass(k, msgspec.Struct):
                found |= _foreign(k, seen)
    return found


def _kinds(tp: Any) -> set[Any]:
    """Every type a field's annotation names, through lists, dicts and unions."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (list, dict, tuple, Union, types.UnionType) or args:
        return {tp} | {k for a in args for k in _kinds(a)}
    return {tp}


def test_dicts_of_anything_are_only_the_listed_foreign_fields() -> None:
    """Only the fields FOREIGN_JSON lists (at most 3) hold a dict of anything; everything aqbench writes itself
    is a Struct. Reports hold typed values too: their one foreign field is ServerReady.models' copy."""
    seen: set[type] = set()
    journal = set().union(*(_foreign(cls, seen) for cls in EVENT_TYPES))
    assert journal == set(FOREIGN_JSON) and len(FOREIGN_JSON) <= 3
    assert _foreign(RunReport, set()) == {"ServerFacts.served_models"}
    assert _foreign(SoakReport, set()) == set()
