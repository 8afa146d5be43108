"""The journal: every event type round-trips, a killed writer leaves a replayable file, corruption is named."""

from __future__ import annotations

import copy
import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest

from orchestrator.base.errors import JournalError
from orchestrator.events import EVENT_TYPES, SCHEMA_VERSION, AnswerMismatch, IdentityPhase, LogLine, RunStarted
from orchestrator.reports.windows import inner_edge
from orchestrator.spine.journal import decode_event, encode_event, read_journal


def _example(cls: type) -> Any:
    """An instance of `cls` with every required field filled by a value of its type."""
    fill = {int: 7, float: 1.5, str: "x", bool: True}
    kwargs = {}
    for f in msgspec.structs.fields(cls):
        if f.required:
            t = f.type
            origin = getattr(t, "__origin__", None)
            if t in fill:
                kwargs[f.name] = fill[t]
            elif origin is list:
                kwargs[f.name] = []
            elif str(t).startswith("typing.Literal"):
                kwargs[f.name] = t.__args__[0]
            elif isinstance(t, type) and issubclass(t, msgspec.Struct):
                kwargs[f.name] = _example(t)
            else:
                kwargs[f.name] = 0 if "int" in str(t) else None
    return cls(**kwargs)


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_every_event_round_trips(cls: type) -> None:
    """Each member of AnyEvent encodes to one line and decodes back equal, with a snake_case kind tag."""
    ev = _example(cls)
    raw = encode_event(ev)
    assert b"\n" not in raw
    assert decode_event(raw) == ev
    assert msgspec.json.decode(raw)["kind"][0].islower()


def test_every_event_subclass_is_in_the_union() -> None:
    """Nothing subclasses Event without being decodable from the journal."""
    assert len(EVENT_TYPES) >= 30 and RunStarted in EVENT_TYPES
    assert len({c.__name__ for c in EVENT_TYPES}) == len(EVENT_TYPES)


def test_killed_writer_leaves_journal_replayable_to_torn_line(tmp_path: Path) -> None:
    """A writer killed with SIGKILL mid-run leaves a journal whose every whole line replays."""
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(f"""
        import anyio, sys, pathlib
        from orchestrator.spine.bus import Bus
        from orchestrator.spine.journal import JournalWriter
        from orchestrator.events import LogLine
        async def main():
            bus = Bus("killed")
            async with anyio.create_task_group() as tg:
                await tg.start(JournalWriter(pathlib.Path({str(tmp_path)!r}) / "events.jsonl").run, bus)
                i = 0
                while True:
                    await bus.publish(LogLine(stream="w", text="x" * 500 + str(i)))
                    i += 1
                    if i % 500 == 0:
                        print(i, flush=True)
                        await anyio.sleep(0)
        anyio.run(main)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for _ in range(4):
        proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    path = tmp_path / "events.jsonl"
    # Simulate the torn tail a kill mid-write() leaves, then replay.
    with path.open("ab") as fh:
        fh.write(b'{"kind":"log_line","run_id":"killed","seq":99999,"text":"xx')
    events, torn = read_journal(path)
    assert len(events) >= 1500
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert torn is not None and torn.line == len(events) + 1


def test_a_short_batch_after_a_long_one_writes_only_its_own_events(tmp_path: Path) -> None:
    """The writer keeps one buffer for the run (issue 23): a batch of three events after a batch of a
    thousand long ones writes those three lines, with nothing left over from the longer batch."""
    import anyio

    from orchestrator.spine.bus import Bus
    from orchestrator.spine.journal import JournalWriter

    path = tmp_path / "events.jsonl"

    async def written(stream: bytes, n: int) -> None:
        """Until the journal holds `n` lines of `stream`: the writer drained its batch."""
        with anyio.fail_after(30):
            while path.read_bytes().count(b'"stream":"' + stream + b'"') < n:
                await anyio.sleep(0.01)

    async def main() -> None:
        bus = Bus("batches")
        async with anyio.create_task_group() as tg:
            await tg.start(JournalWriter(path).run, bus)
            for i in range(1000):
                bus.publish_nowait(LogLine(stream="long", text="x" * 2000 + str(i)))
            await written(b"long", 1000)
            for i in range(3):  # each short event its own batch, after the long one
                await bus.publish(LogLine(stream="short", text=str(i)))
                await written(b"short", i + 1)
            await bus.aclose()

    anyio.run(main)
    events, torn = read_journal(path)
    assert torn is None
    texts = [e.text for e in events if isinstance(e, LogLine)]
    assert texts == ["x" * 2000 + str(i) for i in range(1000)] + ["0", "1", "2"]
    assert path.read_bytes().count(b"\n") == len(events)


def test_corruption_before_last_line_is_an_error(tmp_path: Path) -> None:
    """A bad line in the middle is a JournalError naming file and line."""
    path = tmp_path / "events.jsonl"
    lines = [encode_event(LogLine(stream="s", text=str(i), seq=i + 1)) for i in range(3)]
    path.write_bytes(lines[0] + b"\n" + b"{not json\n" + lines[2] + b"\n")
    with pytest.raises(JournalError, match=rf"{path}:2: corrupt journal line"):
        read_journal(path)


def test_complete_last_line_is_not_torn(tmp_path: Path) -> None:
    """A journal ending in a whole line has no torn line."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(encode_event(LogLine(stream="s", text="a")) + b"\n")
    events, torn = read_journal(path)
    assert torn is None and isinstance(events[0], LogLine)


class TestSchemaVersions:
    FIXTURE = Path(__file__).resolve().parents[2] / "data" / "journals" / "qualify-v1"

    def test_a_version_1_journal_replays_to_the_reports_it_had(self, tmp_path: Path) -> None:
        """A real qualify journal written by the release before typed payloads (schema 1) folds, through
        `aqbench report`, into the reports kept beside it: the ones that release wrote, plus only what later
        reports added since (the completeness table, every kind under its gate, no client-lifecycle row, the
        non-inferiority row, null without a reference), byte for byte; report.json also with schema 3's typed
        values (THIS_RELEASE)."""
        journal = tmp_path / "events.jsonl"
        journal.write_bytes(gzip.decompress((self.FIXTURE / "events.jsonl.gz").read_bytes()))
        first = decode_event(journal.read_bytes().split(b"\n", 1)[0])
        assert isinstance(first, RunStarted) and first.schema_version == 1 and SCHEMA_VERSION > 1
        done = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(journal)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "report.md").read_text() == (self.FIXTURE / "report.md").read_text()
        assert (tmp_path / "report.html").read_bytes() == gzip.decompress((self.FIXTURE / "report.html.gz").read_bytes())
        # Percentiles now come from numpy, whose interpolation rounds differently in the last bit.
        got = msgspec.json.decode((tmp_path / "report.json").read_bytes())
        want = msgspec.json.decode(gzip.decompress((self.FIXTURE / "report.json.gz").read_bytes()))
        assert _same(got, _report_json_now(want, journal))

    @pytest.mark.parametrize("name", ["qualify-v2", "soak-v2"])
    def test_a_version_2_journal_rebuilds_its_reports_byte_for_byte(self, tmp_path: Path, name: str) -> None:
        """A real journal of schema 2 (a qualify with a reference side and its non-inferiority judgment, and a
        90 s soak with checkpoints) folds, through `aqbench report`, into exactly the reports its run wrote:
        report.{md,html} and soak.{md,html} byte for byte, report.json and soak.json apart from schema 3's
        typed values (THIS_RELEASE), with nothing lost."""
        fixture = self.FIXTURE.parent / name
        journal = tmp_path / "events.jsonl"
        journal.write_bytes(gzip.decompress((fixture / "events.jsonl.gz").read_bytes()))
        first = decode_event(journal.read_bytes().split(b"\n", 1)[0])
        assert isinstance(first, RunStarted) and first.schema_version == 2
        done = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(journal)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        kept = sorted(p.name.removesuffix(".gz") for p in fixture.iterdir() if p.name != "events.jsonl.gz")
        assert kept == (["report.html", "report.json", "report.md"]
                        + (["soak.html", "soak.json", "soak.md"] if name.startswith("soak") else []))
        stored = {r: (fixture / r).read_bytes() if (fixture / r).is_file()
                  else gzip.decompress((fixture / f"{r}.gz").read_bytes()) for r in kept}
        for report in kept:
            if not report.endswith(".json"):
                assert (tmp_path / report).read_bytes() == _soak_text_now(stored[report]), report
        got = msgspec.json.decode((tmp_path / "report.json").read_bytes())
        assert got == _report_json_now(msgspec.json.decode(stored["report.json"]), journal)
        if "soak.json" in stored:
            _assert_soak_json_now(msgspec.json.decode((tmp_path / "soak.json").read_bytes()),
                                  msgspec.json.decode(stored["soak.json"]))

    def test_version_1_mismatches_keep_their_answers(self, tmp_path: Path) -> None:
        """Schema 1 kept a mismatch's answers beside its ids; reading upgrades them into `answers`."""
        lines = [
            {"kind": "run_started", "seq": 1, "schema_version": 1, "command": "qualify"},
            {"kind": "phase_finished", "seq": 2, "phase": "identity", "model": "m", "outcome": "failed",
             "detail": {"compared": 2, "mismatches": [{"item_id": "i1", "arm": "audio", "http": "a", "native": "b"}]}},
        ]
        journal = tmp_path / "events.jsonl"
        journal.write_bytes(b"".join(msgspec.json.encode(x) + b"\n" for x in lines))
        events, _ = read_journal(journal)
        detail = events[1].detail  # type: ignore[union-attr]
        assert isinstance(detail, IdentityPhase) and detail.compared == 2
        assert detail.mismatches == [AnswerMismatch(item_id="i1", arm="audio", answers={"http": "a", "native": "b"})]

    def test_a_journal_of_an_unknown_version_is_refused_by_name(self, tmp_path: Path) -> None:
        """A journal older than any version this release reads says so, naming the file."""
        journal = tmp_path / "events.jsonl"
        journal.write_bytes(msgspec.json.encode({"kind": "run_started", "seq": 1, "schema_version": 0}) + b"\n"
                            + msgspec.json.encode({"kind": "run_finished", "seq": 2}) + b"\n")
        with pytest.raises(JournalError, match=r"events.jsonl: journal schema version 0 is not one this aqbench reads"):
            read_journal(journal)


# THIS_RELEASE: what report.json and soak.json gained with journal schema 3 (reports hold typed values): a
# capability check's evidence is tagged by its `kind`, a window's `soak` and a row's `aiperf_settings` are null
# where they were {}, `served_models` lists the server's /v1/models entries (ServerReady's; the keys of the
# /v1/models object before), report.json's version is 2; soak.json (version 3) keeps each verdict as journaled,
# and its settings show issue 29's new [soak] keys (warmup_s, rss_wander_mib) at their defaults.


# Issue 29 (deliberate): a soak's model reads as its soak's outcome, no longer "error" ("the run ended before
# this model's result"), and a soak whose verdicts include an inconclusive one no longer reads PASSED.
_SOAK_NOW = [
    (b"**error**", b"**soak-inconclusive**"),
    (b"### reference-audioqa: error\n\nReason: the run ended before this model's result\n",
     b"None: no soak verdict failed.\n"),
    (b"<h3>reference-audioqa: <span class=\"status st-error\">error</span></h3><p>Reason: the run ended before this "
     b"model&#x27;s result</p>", b"<p>None: no soak verdict failed.</p>"),
    (b'<span class="status st-error">error</span>', b'<span class="status st-soak-inconclusive">soak-inconclusive</span>'),
    (b"Soak PASSED with 2 inconclusive", b"Soak INCONCLUSIVE (server_p99_latency, correctness; no verdict failed)"),
]


def _soak_text_now(old: bytes) -> bytes:
    """A soak-v2 report as this release writes it (_SOAK_NOW); a qualify report is unchanged."""
    if b"aqbench soak" not in old and b"`soak`" not in old and b"soak-2026" not in old:
        return old
    for was, now in _SOAK_NOW:
        old = old.replace(was, now)
    return old


def _report_json_now(old: dict[str, Any], journal: Path) -> dict[str, Any]:
    """report.json as an earlier release wrote it, with THIS_RELEASE's changes (one-model fixtures)."""
    ready = next(json.loads(ln) for ln in journal.read_text().splitlines() if '"kind":"server_ready"' in ln)
    new = copy.deepcopy(old)
    new["report_version"] = 2
    for row in new["rows"]:
        for check in row["capability"]:
            check["evidence"] = {"kind": check["check"], **check["evidence"]} if check["evidence"] else None
        row["aiperf_settings"] = row["aiperf_settings"] or None
        row["server"]["served_models"] = ready["models"]
        row["keyed_by"] = None  # issue 34: the run key, unknown before
        # issue 35: restarts and spans with their causes, stops whose traceback was expected
        row["server"].update(restart_causes=[], state_spans=[], expected_stops=[])
        row["server"]["orphans_reaped"] = 0  # escaped processes that died with the server, reaped (unknown before)
        row["counts"]["error_answers"] = []  # issue 35: what failed requests were answered
        # issue 52: the GPUs the server used and how busy they were (none on the CPU host that wrote these)
        row.update(gpus=[], gpu_busy_percent=None)
        row["server"]["gpus"] = []
        if row.get("noninferiority") is not None:  # issue 30: what the decision could detect (unknown before)
            row["noninferiority"].update(fail_from_b=None, detectable_regression=None,
                                         detectable_power_regression=None)
    new["provenance"]["gpu_identity"] = []  # issue 52: each GPU's identity (none here)
    for window in new["windows"]:
        window["soak"] = window["soak"] or None
        window["counts"]["error_answers"] = []
    for chart in new["charts"].values():  # inner histogram edges to 12 significant digits (numpy 2.4's last bit)
        edges = chart["histogram"]["edges_ms"]
        chart["histogram"]["edges_ms"] = edges[:1] + [inner_edge(e) for e in edges[1:-1]] + edges[-1:]
    for row in new["rows"]:  # issue 29: a soak's model reads as its soak's outcome (see _SOAK_NOW)
        if row["status"] == "error" and new["provenance"]["command"] == "soak":
            row["status"] = "soak-inconclusive"
            row["reason"] = "inconclusive (the evidence cannot decide): server_p99_latency, correctness"
    return _gates_applicable(new)


def _gates_applicable(value: Any) -> Any:
    """Every gate in a schema-2 report gains issue 30's `applicable`, True: the journal never wrote it, so it
    decodes to its default."""
    if isinstance(value, dict):
        if {"gate", "scope", "required", "observed", "passed", "total"} <= value.keys():
            value["applicable"] = True
        for item in value.values():
            _gates_applicable(item)
    elif isinstance(value, list):
        for item in value:
            _gates_applicable(item)
    return value


def _assert_soak_json_now(got: dict[str, Any], old: dict[str, Any]) -> None:
    """soak.json as schema-2 code wrote it, with THIS_RELEASE's changes: every verdict is the SoakVerdict as
    journaled, its detail typed, holding every number the old row's detail held."""
    assert got["report_version"] == 3
    old = _gates_applicable(copy.deepcopy(old))
    # Issue 29's [soak] keys read from a config snapshot without them: their defaults.
    old["settings"].update(warmup_s=60.0, rss_wander_mib=3.0, latency_baseline_s=120.0, latency_drift_rule="window",
                           aiperf_handover_mib=32.0, aiperf_handover_every_s=0.0, journal="compact")
    old["plan"] = []  # no plan was journaled before issue 29
    old["handovers"] = []  # nor AIPerf handovers
    old["restart_events"] = []  # nor the restarts dated by their spawns
    old.update(gpu_identity=[], gpus=[], gpu_notices=[])  # issue 52: the GPU section (no GPU on that host)
    # Nor an early stop or its plan; and its requests all succeeded: no kind of error to list.
    old.update(stopped=None, stop_plan=[], error_kinds=[])
    old["tails"] = []  # nor a segment's tail (its last window closed at AIPerf's exit then)
    assert {k: v for k, v in got.items() if k not in ("report_version", "verdicts")} == \
        {k: v for k, v in old.items() if k not in ("report_version", "verdicts")}
    assert [v["metric"] for v in got["verdicts"]] == [v["metric"] for v in old["verdicts"]]
    for new, was in zip(got["verdicts"], old["verdicts"], strict=True):
        assert (new["kind"], new["detail"]["kind"]) == ("soak_verdict", new["detail"]["kind"])
        assert [new[k] for k in ("outcome", "final", "reason")] == [was[k] for k in ("outcome", "final", "reason")]
        for key, value in was["detail"].items():
            assert (new["windows_closed"] if key == "windows_closed" else new["detail"][key]) == value, key


def _same(got: Any, want: Any, where: str = "$") -> bool:
    """Equal JSON values, floats within 1e-12 relative; raises AssertionError naming the first difference."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        return all(_same(got[k], want[k], f"{where}.{k}") for k in want)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        return all(_same(g, w, f"{where}[{i}]") for i, (g, w) in enumerate(zip(got, want, strict=True)))
    if isinstance(want, float) and isinstance(got, float):
        assert got == pytest.approx(want, rel=1e-12), where
        return True
    assert got == want, where
    return True
