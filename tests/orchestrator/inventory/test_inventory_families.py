"""Tests for `aqbench inventory` on a checkout laid out like TRTMC's current main (`families/<family>/` with
support.py, manifests, model.py, runtime/ and an edge_llm README, plus the served chat schema and the owners'
apps/aiperf_qual config): the layout, classes, the audio-QA candidate's route, gate, quality and blockers,
citations, unreadable files, reconciliation, and the ledger's open item (issue 31).

The checkout is tests/data/inventory/main: our own files in TRTMC's shapes, copied to a temporary folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from inventory_support import git, inventory_of, main, row

from orchestrator.inventory.render import to_markdown
from orchestrator.ledger import Ledger

MAIN = Path(__file__).resolve().parents[2] / "data" / "inventory" / "main"
LYRA = ("acme/lyra-4-A2B-it", "acme/lyra-4-A4B-it", "acme/lyra-4-12B-it")
README = "families/lyra/edge_llm/README.md"
SCHEMA = "apps/server/python/trtmc_server/schemas.py"
BENCH = """
[[models]]
name = "reference-audioqa"
family = "aqbench-reference"
checkpoint = "aqbench/reference-cascade"
[models.correctness]
min_pass_rate = 0.9

[inventory]
candidates = ["acme/Prism-multimodal", "acme/lyra-4-A4B-it"]
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "trtmc"
    shutil.copytree(MAIN, root)
    (root / "README.md").unlink()  # ours, describing the fixture; not part of the stand-in
    return root


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


class TestLayout:
    def test_families_layout_is_detected_with_its_files(self, checkout: Path) -> None:
        """A checkout with families/<f>/support.py and families/<f>/tests/manifests is the current layout."""
        inv = inventory_of(checkout)
        assert inv.layout == "families" and inv.layouts_found == ["families"]
        assert {e.claim for e in inv.layout_evidence} == {"layout:families"}
        assert inv.accounted, inv.unaccounted

    @pytest.mark.parametrize("rev", ["", "HEAD"])
    def test_the_same_inventory_from_the_folder_and_at_a_revision(self, checkout: Path, rev: str) -> None:
        """Family files and checkout-wide files are read alike from the working folder and through git."""
        git(checkout, "init", "-q")
        git(checkout, "add", "-A")
        git(checkout, "commit", "-qm", "main")
        inv = inventory_of(checkout, rev)
        assert inv.source.read_via == ("git" if rev else "folder")
        assert sorted(r.checkpoint for r in inv.rows if r.capability_class == "audio-qa") == sorted(LYRA)
        assert inv.served_route is not None and inv.served_route.accepts_audio is False


class TestClasses:
    def test_generators_and_voice_cloning_are_classes_of_their_own(self, checkout: Path) -> None:
        """A video with a soundtrack, music and speech in a reference voice are not "speech output"."""
        inv = inventory_of(checkout)
        assert row(inv, "acme/Reelgen-2").capability_class == "audio-video-generation"
        music = row(inv, "acme/TuneSmith-Music-3")
        assert music.capability_class == "music-generation" and "no audio input" in music.gap
        assert any(e.claim == "class:music-generation" and e.field == "hf_id" for e in music.evidence)
        clone = row(inv, "acme/Clonetalk-0.5B")
        assert clone.capability_class == "voice-cloning" and "no audio input" not in clone.gap
        assert clone.gap.startswith("voice cloning: text and a reference voice clip in")
        cites = {(e.file, e.field, e.value) for e in clone.evidence if e.claim == "class:voice-cloning"}
        assert ("families/clonetalk/runtime/pipeline.h", "line 2", "reference_audio_generation") in cites
        assert ("families/clonetalk/support.py", "line 7", "speech_tokenizer.onnx") in cites

    def test_family_default_precision_from_support_py(self, checkout: Path) -> None:
        """A manifest without precision takes its family's support.py default_precision, cited by line."""
        r = row(inventory_of(checkout), "acme/Clonetalk-0.5B")
        assert r.precision == "fp32" and r.precision_source is not None
        assert (r.precision_source.file, r.precision_source.field) == ("families/clonetalk/support.py", "line 9")

    def test_spoken_session_without_system_prompt_says_so(self, checkout: Path) -> None:
        """A speech session whose manifest carries no system prompt is not said to have one."""
        r = row(inventory_of(checkout), "acme/Chatterbox-11B")
        assert r.capability_class == "spoken-dialogue" and "system prompt" not in r.gap
        assert r.gap.startswith("spoken dialogue: audio in, speech and text out; no text question")

    def test_text_only_thinker_gaps_cite_support_runtime_and_owners(self, checkout: Path) -> None:
        """A text-only omni checkpoint: support.py Tasks, the runtime's loaded engine and the owners' config, each
        with its line."""
        r = row(inventory_of(checkout), "acme/Omnivox-30B-Instruct")
        assert r.capability_class == "text-only" and r.in_audio_group
        by_kind = {g.kind: g for g in r.gaps}
        assert by_kind["tasks-take-no-audio"].text == (
            "its family declares only `text_generation` (families/omnivox/support.py line 7): no Task that takes audio")
        assert by_kind["runtime-takes-no-audio"].text == (
            "its runtime loads only `thinker.plan` (families/omnivox/runtime/plugin.cpp line 4) and binds no Task that "
            "takes audio")
        owner = by_kind["owner-config"]
        assert [(e.file, e.field) for e in owner.evidence] == [
            ("apps/aiperf_qual/config/models/omnivox-30b.yaml", "line 1"),
            ("apps/aiperf_qual/config/models/omnivox-30b.yaml", "line 2")]
        assert r.gap.startswith("its family declares only `text_generation`")

    def test_images_only_family_cites_its_readme(self, checkout: Path) -> None:
        """A vision-language candidate's gap quotes its Edge-LLM README's sentence that audio is not exposed."""
        r = row(inventory_of(checkout, candidates=["acme/Prism-multimodal"]), "acme/Prism-multimodal")
        assert r.capability_class == "vision-language" and r.candidate
        assert r.gaps[0].kind == "readme-audio-not-exposed"
        assert r.gaps[0].evidence[0].file == "families/prism/edge_llm/README.md"
        assert r.gaps[0].evidence[0].field == "line 3"
        assert "audio is not exposed here" in r.gap


class TestCandidate:
    def test_route_limits_and_precision_from_the_family_readme_and_build(self, checkout: Path) -> None:
        """Each audio-QA checkpoint carries fp16, TP 1, batch 1, standalone only, paired media not mapped, with
        the README lines and the build's request checks."""
        inv = inventory_of(checkout)
        for checkpoint in LYRA:
            r = row(inv, checkpoint)
            assert (r.capability_class, r.status, r.precision) == ("audio-qa", "blocked", "fp16"), checkpoint
            assert r.route is not None
            assert (r.route.precision, r.route.tensor_parallel, r.route.batch, r.route.modes) == (
                "fp16", 1, 1, ["standalone"])
            assert r.route.paired_media == "not mapped (paired builds are text-only)"
            cites = {(e.claim, e.file, e.field) for e in r.route.evidence}
            assert ("route:precision", README, "line 7") in cites and ("route:paired", README, "line 9") in cites
            assert ("route:build", "families/lyra/edge_llm/standalone.py", "line 6") in cites
            assert r.precision_source is not None and r.precision_source.file == README

    def test_recorded_quality_only_the_small_one_passed_audio(self, checkout: Path) -> None:
        """The README's table records A4B's and 12B's audio runs as quality failures and A2B's as a pass: only
        the two failures are quality blockers."""
        inv = inventory_of(checkout)
        outcomes = {c: [(q.outcome, q.mode, q.line) for q in row(inv, c).quality] for c in LYRA}
        assert outcomes == {"acme/lyra-4-A2B-it": [("passed", "standalone text and audio", 18)],
                            "acme/lyra-4-A4B-it": [("quality-failure", "standalone text/audio", 19)],
                            "acme/lyra-4-12B-it": [("quality-failure", "standalone audio", 20)]}
        assert [b.kind for b in row(inv, "acme/lyra-4-A2B-it").blockers] == ["route", "gate"]
        for c in ("acme/lyra-4-A4B-it", "acme/lyra-4-12B-it"):
            assert [b.kind for b in row(inv, c).blockers] == ["route", "gate", "quality"]

    def test_route_and_gate_blockers_cite_the_schema_and_the_owners_tasks(self, checkout: Path) -> None:
        """No served route: the chat schema's content takes text parts only (its lines); no owners' gate: tasks.yaml
        has no audio_text_to_text Task and no family qualification file names the checkpoint."""
        r = row(inventory_of(checkout), "acme/lyra-4-A2B-it")
        route, gate = r.blockers
        assert route.text == (f"no served route accepts audio: the chat message content takes only `text` parts "
                              f"({SCHEMA} line 19, 13)")
        assert [(e.file, e.field) for e in route.evidence] == [(SCHEMA, "line 19"), (SCHEMA, "line 13")]
        assert r.owner_gate is not None and not r.owner_gate.exists
        assert gate.text.startswith("no owners' gate: apps/aiperf_qual/config/tasks.yaml gates no `audio_text_to_text` "
                                    "Task (it gates: audio_generation, text_generation, transcription")
        assert "no families/lyra/tests/{benchmark,qualification}/ file names acme/lyra-4-A2B-it" in gate.text
        assert any(e.claim == "status:blocked:route" and e.file == SCHEMA for e in r.evidence)

    def test_an_owners_gate_removes_the_gate_blocker(self, checkout: Path) -> None:
        """Once the owners' tasks.yaml gates audio_text_to_text, the gate is cited and no longer blocks."""
        tasks = checkout / "apps/aiperf_qual/config/tasks.yaml"
        tasks.write_text(tasks.read_text() + "  audio_text_to_text:\n    absolute: [audio_questions]\n")
        r = row(inventory_of(checkout), "acme/lyra-4-A2B-it")
        assert r.owner_gate is not None and r.owner_gate.exists
        assert [(e.file, e.field) for e in r.owner_gate.evidence] == [("apps/aiperf_qual/config/tasks.yaml", "line 20")]
        assert [b.kind for b in r.blockers] == ["route"]

    def test_a_route_that_accepts_audio_leaves_only_real_blockers(self, checkout: Path) -> None:
        """A chat schema with an input_audio part is a served route: the pass-only checkpoint is then blocked
        only by the missing gate, the failing ones by gate and quality."""
        schema = checkout / SCHEMA
        schema.write_text(schema.read_text().replace(
            "class Message(Strict):", "class AudioPart(Strict):\n    type: Literal[\"input_audio\"]\n\n\n"
            "class Message(Strict):").replace("list[TextPart]", "list[TextPart | AudioPart]"))
        inv = inventory_of(checkout)
        assert inv.served_route is not None and inv.served_route.part_types == ["input_audio", "text"]
        assert [b.kind for b in row(inv, "acme/lyra-4-A2B-it").blockers] == ["gate"]
        assert [b.kind for b in row(inv, "acme/lyra-4-12B-it").blockers] == ["gate", "quality"]

    def test_markdown_lists_the_candidates_with_what_blocks_them(self, checkout: Path) -> None:
        md = to_markdown(inventory_of(checkout))
        assert ("| acme/lyra-4-A4B-it | blocked | fp16, TP 1, batch 1, standalone; paired media not mapped (paired "
                "builds are text-only) | none | quality failure: standalone text/audio | route, gate, quality |") in md
        assert "| acme/lyra-4-A2B-it | audio-qa | blocked | (no manifest) | audio_text_to_text | blocked by route, gate;" in md


class TestTasksAndUnreadable:
    def test_every_audio_task_name_is_classed(self, checkout: Path) -> None:
        """Task names from manifests, support.py, bindings, the owners' Tasks and the Task SDK are all in the
        list, the newer audio-input names included."""
        seen = {t.task: (t.capability_class, t.flagged) for t in inventory_of(checkout).tasks_seen}
        assert seen["image_audio_to_text"] == ("audio-qa", False)
        assert seen["image_audio_text_to_text_speech_response"] == ("audio-qa", False)
        assert seen["speech_session"] == ("spoken-dialogue", False)
        assert seen["text_to_audio_video"] == ("audio-video-generation", False)
        assert not any(flagged for _, flagged in seen.values())
        assert "text_generation" not in seen

    def test_an_unknown_audio_task_is_flagged_for_a_person(self, checkout: Path) -> None:
        """A Task the list does not know that speaks of audio is flagged (never guessed): in the SDK it is
        unaccounted; as a manifest's Task its row is unknown and unaccounted."""
        sdk = checkout / "include/trtmc/tasks.h"
        sdk.write_text(sdk.read_text() + 'class IAudioCaptioning { static constexpr const char* kTask = "audio_captioning"; };\n')
        manifest = checkout / "families/tunesmith/tests/manifests/tunesmith-3.json"
        manifest.write_text(manifest.read_text().replace('"task": "audio_generation"', '"task": "audio_inpainting"'))
        inv = inventory_of(checkout)
        flagged = {t.task for t in inv.tasks_seen if t.flagged}
        assert flagged == {"audio_captioning", "audio_inpainting"}
        r = row(inv, "acme/TuneSmith-Music-3")
        assert (r.capability_class, r.accounted) == ("unknown", False)
        assert "Task `audio_inpainting` speaks of audio but is not in the inventory's Task list" in r.gap
        assert not inv.accounted
        assert any(u.startswith("Task `audio_captioning` (include/trtmc/tasks.h line 9) speaks of audio")
                   for u in inv.unaccounted)

    def test_unreadable_family_files_are_unaccounted(self, checkout: Path) -> None:
        """A support.py or build file the audit cannot parse, and a family with no manifest that declares an
        audio Task, are listed as unaccounted; a text family without a manifest is a note only."""
        (checkout / "families/reelgen/model.py").write_text("def build(:\n")
        (checkout / "families/chatterbox/support.py").write_text("describe = family_support(\n")
        write = checkout / "families/murmur"
        write.mkdir()
        (write / "support.py").write_text('describe = family_support(tasks=("transcription",))\n')
        inv = inventory_of(checkout)
        notes = {n.family: n for n in inv.family_notes}
        assert not notes["murmur"].accounted and "declares `transcription`" in notes["murmur"].text
        assert notes["loner"].accounted and "outside the audio group" in notes["loner"].text
        assert not inv.accounted
        assert "families/reelgen: families/reelgen/model.py: not valid Python (line 1: invalid syntax): what it " \
               "builds cannot be read" in inv.unaccounted
        assert any(u.startswith("families/chatterbox: families/chatterbox/support.py not valid Python")
                   for u in inv.unaccounted)

    def test_nothing_cites_a_path_this_repository_does_not_ship(self, checkout: Path, tmp_path: Path) -> None:
        """Every file the JSON cites is the checkout's own (all present in this checkout) or bench.toml; never
        this project's documents."""
        bench = tmp_path / "bench.toml"
        bench.write_text(BENCH)
        out = tmp_path / "inv.json"
        assert main(["inventory", "--trtmc", str(checkout), "--config", str(bench), "--json", str(out)]) == 0
        files = {m for m in _values(json.loads(out.read_text()), "file") if m}
        assert {f for f in files if not (checkout / f).is_file()} <= {str(bench), "bench.toml"}


def _values(data: Any, key: str) -> list[str]:
    if isinstance(data, dict):
        return [v for k, v in data.items() if k == key and isinstance(v, str)] + \
            [x for v in data.values() for x in _values(v, key)]
    if isinstance(data, list):
        return [x for v in data for x in _values(v, key)]
    return []


class TestReconcile:
    def _json(self, checkout: Path, tmp_path: Path, name: str, *extra: str) -> Path:
        bench = tmp_path / "bench.toml"
        bench.write_text(BENCH)
        out = tmp_path / name
        main(["inventory", "--trtmc", str(checkout), "--config", str(bench), "--json", str(out), *extra])
        return out

    def test_a_commit_id_in_a_gap_and_tier_wording_are_no_change(self, checkout: Path, tmp_path: Path) -> None:
        """An old inventory whose gap sentences quote another commit and whose L0 phrases are worded otherwise
        reconciles with no change: gaps compare by kind, variants by axes."""
        l0 = checkout / "families/omnivox/tests/manifests/omnivox-30b-l0.json"
        l0.write_text((checkout / "families/omnivox/tests/manifests/omnivox-30b.json").read_text()
                      .replace('"omnivox-30b"', '"omnivox-30b-l0"'))
        old = self._json(checkout, tmp_path, "old.json")
        data = json.loads(old.read_text())
        for r in data["rows"]:
            r["gap"] = r["gap"] + " (read at commit 0123456789abcdef)"
            for g in r["gaps"]:
                g["text"] = g["text"].replace("families/", "families@0123456789ab/")
        for v in data["variants"]:
            v["differs"] = ["PR-CI level zero tier"]
        old.write_text(json.dumps(data))
        md = tmp_path / "diff.md"
        bench = tmp_path / "bench.toml"
        assert main(["inventory", "--trtmc", str(checkout), "--config", str(bench), "--against", str(old),
                     "--markdown", str(md)]) == 0
        text = md.read_text()
        assert "No checkpoint present in both changed." in text and "- group changed (exit 1): no" in text

    def test_moves_in_and_out_of_the_considered_list_and_renamed_tasks(self, checkout: Path, tmp_path: Path) -> None:
        """A checkpoint that leaves the group for the considered list, one that joins it from there, and a Task
        renamed with its class kept are each reported as such; the moves change the group (exit 1)."""
        old = self._json(checkout, tmp_path, "old.json")
        data = json.loads(old.read_text())
        reel = next(r for r in data["rows"] if r["checkpoint"] == "acme/Reelgen-2")
        data["rows"].remove(reel)
        data["considered"] = [{"checkpoint": "acme/Reelgen-2", "profile": "reelgen-768p", "file": reel["file"],
                               "capability_class": "vision-language", "reason": "audio only in what it makes"}]
        chat = next(r for r in data["rows"] if r["checkpoint"] == "acme/Chatterbox-11B")
        chat["task_strategy"] = "speech_to_speech"
        old.write_text(json.dumps(data))
        # The new side: Prism's manifest now says it makes a soundtrack, so it is considered, not a row.
        prism = checkout / "families/prism/tests/manifests/prism-mm.json"
        prism.write_text(prism.read_text().replace('"precision": "fp16",', '"precision": "fp16", '
                                                   '"description": "captions with a soundtrack",'))
        bench = tmp_path / "bench.toml"
        bench.write_text(BENCH.replace('"acme/Prism-multimodal", ', ""))
        md = tmp_path / "diff.md"
        assert main(["inventory", "--trtmc", str(checkout), "--config", str(bench), "--against", str(old),
                     "--markdown", str(md)]) == 1
        text = md.read_text()
        assert "- moved into the group from the considered list: acme/Reelgen-2" in text
        assert "- moved out of the group to the considered list: acme/Prism-multimodal" in text
        assert "- added: none" in text and "- removed: none" in text
        assert "- Tasks renamed (same class): acme/Chatterbox-11B `speech_to_speech` -> `speech_session`" in text


class TestLedger:
    def test_the_candidate_is_the_groups_open_item(self, checkout: Path, tmp_path: Path) -> None:
        """`aqbench ledger` over the inventory lists the audio-QA checkpoints as the group's open item, each with
        its route and exactly what blocks it."""
        bench = tmp_path / "bench.toml"
        bench.write_text(BENCH)
        inv, out, md = tmp_path / "inv.json", tmp_path / "ledger.json", tmp_path / "ledger.md"
        assert main(["inventory", "--trtmc", str(checkout), "--config", str(bench), "--json", str(inv)]) == 0
        main(["ledger", "--inventory", str(inv), "--json", str(out), "--markdown", str(md)])
        led = msgspec.json.decode(out.read_bytes(), type=Ledger)
        items = {o.checkpoint: o for o in led.open_items}
        assert sorted(items) == sorted(LYRA)
        assert items["acme/lyra-4-12B-it"].blocked_by == ["route", "gate", "quality"]
        assert items["acme/lyra-4-A2B-it"].blocked_by == ["route", "gate"]
        assert items["acme/lyra-4-A2B-it"].route == "fp16, TP 1, batch 1, standalone; paired media not mapped " \
                                                     "(paired builds are text-only)"
        text = md.read_text()
        assert "## The group's open item" in text
        assert text.index("## The group's open item") < text.index("## Checkpoints")
        assert "Open item: 3 audio-QA checkpoints not qualified." in text
