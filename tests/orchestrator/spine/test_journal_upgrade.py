"""Journals of schema 2 read as schema 3: each detail typed by its phase, rule or check, nothing lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from orchestrator.base.errors import JournalError
from orchestrator.events import (
    AiperfPhase,
    AiperfRunPhase,
    AiperfSettings,
    AudioFacts,
    CapabilityProbed,
    CorrectnessPhase,
    GapDetail,
    MemoryDetail,
    ModelPhase,
    PhaseFinished,
    PhaseStarted,
    ServerPhase,
    ServerRecord,
    SoakLimits,
    SoakPhase,
    SoakVerdict,
    TransportEvidence,
    WindowGap,
)
from orchestrator.spine.journal import read_journal


def _read(tmp_path: Path, command: str, *lines: dict[str, Any]) -> list[Any]:
    """Events of a schema-2 journal of `command` holding `lines` (after its RunStarted)."""
    first = {"kind": "run_started", "seq": 1, "schema_version": 2, "command": command}
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode({**x, "seq": i + 1}) + b"\n" for i, x in enumerate([first, *lines])))
    events, torn = read_journal(path)
    assert torn is None
    return events[1:]


class TestPhaseDetails:
    def test_qualify_phases_get_their_own_details(self, tmp_path: Path) -> None:
        """Each qualify phase's fields land in its own Struct; AIPerf's workload, journaled flat when the
        stage started, becomes its settings; the server's /v1/models body (ServerReady keeps it) is dropped;
        a phase without a detail has none."""
        model, aiperf, server, correctness, bare = _read(
            tmp_path, "qualify",
            {"kind": "phase_started", "phase": "model", "model": "m",
             "detail": {"checkpoint": "org/m", "precision": "int8", "bundle": "/b"}},
            {"kind": "phase_started", "phase": "aiperf", "model": "m",
             "detail": {"warmup_requests": 2, "requests": 12, "concurrency": 2, "streaming": False, "arms": ["audio"]}},
            {"kind": "phase_finished", "phase": "server", "model": "m", "outcome": "passed",
             "detail": {"models": {"object": "list", "data": []}, "argv": ["srv"], "base_url": "http://h:1"}},
            {"kind": "phase_finished", "phase": "correctness", "model": "m", "outcome": "failed",
             "detail": {"failing_items": ["i1"]}},
            {"kind": "phase_started", "phase": "capability", "model": "m"})
        assert isinstance(model, PhaseStarted) and model.detail == ModelPhase(checkpoint="org/m", precision="int8",
                                                                              bundle="/b")
        assert aiperf.detail == AiperfPhase(settings=AiperfSettings(warmup_requests=2, requests=12, concurrency=2,
                                                                    streaming=False, arms=["audio"]))
        assert isinstance(server, PhaseFinished) and server.detail == ServerPhase(argv=["srv"], base_url="http://h:1")
        assert correctness.detail == CorrectnessPhase(failing_items=["i1"])
        assert bare.detail is None

    def test_run_aiperf_and_soak_phases(self, tmp_path: Path) -> None:
        """run-aiperf's `aiperf` phase has its own detail; the soak's settings keep their limits."""
        started, finished, soak = _read(
            tmp_path, "run-aiperf",
            {"kind": "phase_started", "phase": "aiperf", "detail": {"arms": ["audio"], "rows": 8, "window": "m/aiperf-1"}},
            {"kind": "phase_finished", "phase": "aiperf", "outcome": "passed",
             "detail": {"classification": "complete", "balanced": True}},
            {"kind": "phase_started", "phase": "soak",
             "detail": {"duration_s": 90.0, "window_s": 15.0, "limits": {"max_error_rate": 0.5}}})
        assert started.detail == AiperfRunPhase(arms=["audio"], rows=8, window="m/aiperf-1")
        assert finished.detail == AiperfRunPhase(classification="complete", balanced=True)
        assert soak.detail == SoakPhase(duration_s=90.0, window_s=15.0, limits=SoakLimits(max_error_rate=0.5))


class TestCapabilityEvidence:
    def test_evidence_is_typed_by_its_check(self, tmp_path: Path) -> None:
        """The transport check's two exchanges keep their status, body and request id."""
        [probe] = _read(tmp_path, "qualify", {
            "kind": "capability_probed", "model": "m", "check": "transport", "passed": False,
            "evidence": {"with_audio": {"status": 400, "body": "no", "request_id": "a"},
                         "without_audio": {"status": 200, "body": "ok", "request_id": "b"}}})
        assert isinstance(probe, CapabilityProbed) and isinstance(probe.evidence, TransportEvidence)
        assert (probe.evidence.with_audio.status, probe.evidence.with_audio.body,
                probe.evidence.without_audio.request_id) == (400, "no", "b")


class TestSoakVerdicts:
    def test_numbers_published_beside_the_detail_are_in_it_again(self, tmp_path: Path) -> None:
        """Schema 2 published a trend's slope, interval, limit and unit beside its detail: the typed detail
        holds them again, and the verdict keeps them."""
        [v] = _read(tmp_path, "soak", {
            "kind": "soak_verdict", "metric": "server_rss", "passed": False, "final": True, "outcome": "fail",
            "reason": "leaks", "windows_closed": 8, "slope": 12.0, "interval": [9.0, 15.0], "limit": 8.0,
            "unit": "MiB/h", "detail": {"source": "rss", "n": 7, "growth_mib": 70.0, "windows": ["soak/w0002"]}})
        assert isinstance(v, SoakVerdict) and (v.slope, v.interval, v.limit, v.unit) == (12.0, [9.0, 15.0], 8.0, "MiB/h")
        assert v.detail == MemoryDetail(source="rss", n=7, growth_mib=70.0, windows=["soak/w0002"], slope=12.0,
                                        interval=[9.0, 15.0], limit=8.0, unit="MiB/h")

    def test_older_verdicts_kept_their_words_and_numbers_in_the_detail(self, tmp_path: Path) -> None:
        """Before schema 2's typed numbers a verdict kept reason, judged, windows_closed and its limit in the
        detail: they move out where the verdict now keeps them, and the rest is typed."""
        [v] = _read(tmp_path, "soak", {
            "kind": "soak_verdict", "metric": "window_gap", "passed": True,
            "detail": {"judged": False, "reason": "one window", "windows_closed": 1, "limit": 1.0, "unit": "s",
                       "windows": [{"window": "soak/w0002", "gap_s": 0.004, "segment": 1}]}})
        assert (v.outcome, v.reason, v.windows_closed, v.limit, v.unit) == ("inconclusive", "one window", 1, 1.0, "s")
        assert v.detail == GapDetail(limit=1.0, unit="s", windows=[WindowGap(window="soak/w0002", gap_s=0.004,
                                                                             segment=1)])

    def test_a_detail_of_the_wrong_shape_is_a_corrupt_line(self, tmp_path: Path) -> None:
        """A detail that cannot be typed is named by file and line, as any corrupt line is."""
        with pytest.raises(JournalError, match=r"events.jsonl:2: corrupt journal line"):
            _read(tmp_path, "soak", {"kind": "soak_verdict", "metric": "server_rss", "passed": True,
                                     "detail": {"windows": "w1"}}, {"kind": "run_finished"})


def test_server_record_audio_keeps_its_well_typed_fields(tmp_path: Path) -> None:
    """The `audio` object becomes AudioFacts; a field of another type is left out, as the correlator ignored it."""
    [rec] = _read(tmp_path, "ingest", {"kind": "server_record", "request_id": "r",
                                       "audio": {"format": "wav", "seconds": 3, "bytes": True, "extra": 1}})
    assert isinstance(rec, ServerRecord) and rec.audio == AudioFacts(format="wav", seconds=3.0)


class TestOpenIntervals:
    def test_a_verdict_journaled_with_an_open_interval_as_nulls_reads_as_none(self, tmp_path: Path) -> None:
        """A current-schema soak verdict whose interval was written [null, null] (msgspec's form of -inf and
        inf) reads with that interval as None, as such a verdict journals now; any other bad line still fails."""
        from orchestrator.events import SCHEMA_VERSION, SampledMemoryDetail

        first = {"kind": "run_started", "seq": 1, "schema_version": SCHEMA_VERSION, "command": "soak"}
        verdict = {"kind": "soak_verdict", "seq": 2, "source": "soak", "metric": "aiperf_rss", "passed": False,
                   "outcome": "inconclusive", "slope": 61.6, "interval": [None, None], "limit": 8.0, "unit": "MiB/h",
                   "detail": {"kind": "sampled_memory", "slope": 61.6, "interval": [None, None], "limit": 8.0,
                              "growth_mib": 26.6, "growth_interval": [None, None], "n": 4}}
        path = tmp_path / "events.jsonl"
        path.write_bytes(b"".join(msgspec.json.encode(x) + b"\n" for x in (first, verdict)))
        events, torn = read_journal(path)
        assert torn is None
        event = events[1]
        assert isinstance(event, SoakVerdict) and event.interval is None and event.slope == 61.6
        assert isinstance(event.detail, SampledMemoryDetail)
        assert event.detail.interval is None and event.detail.growth_interval is None and event.detail.n == 4
        bad = {**verdict, "slope": None, "limit": [None]}  # not an open interval: named as corrupt, as before
        path.write_bytes(b"".join(msgspec.json.encode(x) + b"\n" for x in (first, bad, first | {"seq": 3})))
        with pytest.raises(JournalError, match=":2: corrupt journal line"):
            read_journal(path)
