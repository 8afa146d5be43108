"""Tests for the inventory's exact variants, findings, owners' status, HTML, bare repositories and the
reconciliation between revisions (issue #17). Fixture checkouts are our own files in TRTMC's shapes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from inventory_support import git, inventory_of, main, row, write_tree

from orchestrator.base.errors import InventoryError
from orchestrator.inventory import read_tree, to_markdown
from orchestrator.inventory.html import to_html

M = "tests/e2e/models/{fam}/manifests/{name}.json"

HARNESS = ("def engine_args(spec, argv):\n"
           "    chosen = spec.metadata.get(\"precision\", \"fp32\")\n"
           "    return argv if chosen == \"fp32\" else [*argv, '--precision', chosen]\n")
WHISPY = {"name": "whispy-large", "hf_id": "acme/whispy-large", "family": "whispy", "task_strategy": "speech_to_text",
          "testcases": [{"name": "t", "user_contract": "exact_transcript", "test_input_audio": "data/a.wav"}]}
PLEXY = {"name": "plexy-7b", "hf_id": "acme/plexy-7b", "family": "plexy", "task_strategy": "speech_to_speech",
         "precision": "fp16", "testcases": [{"name": "t", "user_contract": "speech_response", "ci_tier": "nightly_only",
                                             "l0_replacement": "plexy-7b-l0", "test_input_audio": "data/a.wav"}]}
OMNI = {"name": "qwenish-omni-30b-instruct", "hf_id": "acme/Qwenish-Omni-30B-Instruct", "family": "omnish",
        "task_strategy": "omni_multimodal", "precision": "bf16",
        "testcases": [{"name": "t", "user_contract": "tts_audio", "prompt": "Say hi."}]}
CHATTY = {"name": "chatty-11b", "hf_id": "acme/Chatty-11B", "family": "chatty", "task_strategy": "speech_to_speech",
          "precision": "fp32", "testcases": [{"name": "t", "user_contract": "speech_response", "inputs": {
              "audio": "tests/e2e/models/chatty/assets/sample_talk_input.flac",
              "reference_audio": "tests/e2e/models/chatty/assets/sample_talk_reference.flac",
              "speech_source_relative_path": "examples/sample_audio/sample_talk.wav"}}]}
MEDIA = {"name": "mediamax-768p", "hf_id": "acme/MediaMax", "family": "mediamax", "precision": "bf16",
         "task_strategy": "diffusion_media_generation", "runtime_strategy": "diffusion_mediamax",
         "testcases": [{"name": "t", "user_contract": "diffusion_video", "test_type": "diffusion",
                        "description": "text-to-video-and-audio parity", "prompt_file": "prompts/t2va-1.json"}]}
MATRIX = ("<!-- source data -->\n\n"
          "| Model (`hf_id`) | Profile | Precision | Quant | Provider | GB300 |\n"
          "| --- | --- | --- | --- | --- | --- |\n"
          "| `acme/whispy-large` | `whispy-large` | `FP32` | None | Edgy runtime<br />Dispatch: Coming soon | 🟢 Green |\n"
          "| `acme/Qwenish-Omni-30B-Instruct` | `qwenish-omni-30b-instruct` | `BF16` | None | — | 🔴 Red |\n")
OMNI_CODE = {
    "python/pkgish/families/omnish/plugin.py": (
        "class Plugin:\n    def build_extra_engines(self, weights):\n        result = {}\n"
        "        result[\"audio_encoder_plan\"] = build_audio(weights)\n"
        "        result[\"code2wav_engine_plan\"] = build_codec(weights)\n        return result\n"),
    "src/runtime/models/omnish/plugin.cpp": (
        "auto thinker = load(find_section(ctx.bundle, \"engine_plan\"));\n"
        "auto codec = load(find_section(ctx.bundle, \"code2wav_engine_plan\"));\n"),
    "src/runtime/models/omnish/pipeline.h": (
        "class Pipeline {\n public:\n  AudioResult generate_audio(const std::string& prompt);\n};\n"),
    "src/runtime/models/omnish/omni_audio_plan.h": "struct OmniAudioEncodePlan {\n  int frames;\n};\n",
}


def files() -> dict[str, Any]:
    out: dict[str, Any] = {
        "tests/e2e_harness/orchestrator.py": HARNESS,
        "website/data/model-support-matrix.md": MATRIX,
        M.format(fam="whispy", name="whispy-large"): WHISPY,
        M.format(fam="whispy", name="whispy-large-tp4"): {**WHISPY, "name": "whispy-large-tp4",
                                                          "build_args": {"parallel": {"tp_size": 4}}},
        M.format(fam="plexy", name="plexy-7b"): PLEXY,
        M.format(fam="plexy", name="plexy-7b-l0"): {**PLEXY, "name": "plexy-7b-l0", "testcases": [
            {"name": "t", "user_contract": "speech_response", "ci_tier": "l0_only", "test_input_audio": "data/a.wav"}]},
        M.format(fam="omnish", name="qwenish-omni-30b-instruct"): OMNI,
        M.format(fam="chatty", name="chatty-11b"): CHATTY,
        M.format(fam="mediamax", name="mediamax-768p"): MEDIA,
        **OMNI_CODE,
    }
    return out


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "trtmc", files())


class TestOlderLayout:
    def test_older_layout_is_detected_and_reads_as_before(self, checkout: Path) -> None:
        """tests/e2e/models manifests with python/*/families plugins: the older layout; no served chat schema and
        no owners' Tasks are said to be absent, never guessed, and every other citation is a checkout file."""
        inv = inventory_of(checkout)
        assert inv.layout == "tests/e2e/models" and inv.layouts_found == ["tests/e2e/models"]
        assert inv.served_route is not None and not inv.served_route.present
        assert inv.accounted and inv.family_notes == []
        cited = {e.file for r in inv.rows for e in [*r.evidence, *(e for g in r.gaps for e in g.evidence)]}
        absent = {"apps/server/python/trtmc_server/schemas.py", "apps/aiperf_qual/config/tasks.yaml"}
        assert {f for f in cited if not (checkout / f).is_file()} <= absent


class TestVariantsAndPrecision:
    def test_omitted_precision_resolves_to_the_harness_default_with_its_line(self, checkout: Path) -> None:
        """A manifest without `precision` builds at fp32: the row says so and cites the harness line."""
        inv = inventory_of(checkout)
        r = row(inv, "acme/whispy-large")
        assert r.precision == "fp32"
        assert r.precision_source is not None
        assert (r.precision_source.file, r.precision_source.field) == ("tests/e2e_harness/orchestrator.py", "line 2")
        assert inv.precision_default is not None and inv.precision_default.value == "fp32"
        assert "builds at fp32 (TRTMC's default: `tests/e2e_harness/orchestrator.py` line 2)" in to_markdown(inv)

    def test_without_a_default_in_the_checkout_precision_stays_unknown(self, checkout: Path) -> None:
        """No harness, no assumed default: the omitted precision stays empty rather than guessed."""
        (checkout / "tests/e2e_harness/orchestrator.py").unlink()
        r = row(inventory_of(checkout), "acme/whispy-large")
        assert (r.precision, r.precision_source) == ("", None)

    def test_tp_only_variant_is_labelled_tp_not_precision(self, checkout: Path) -> None:
        """Both profiles build at the default fp32: the TP4 profile differs by TP only."""
        [v] = [v for v in inventory_of(checkout).variants if v.checkpoint == "acme/whispy-large"]
        assert (v.profile, v.kinds, v.differs, v.precision) == (
            "whispy-large-tp4", ["tensor-parallel"], ["TP 4 (normal 1)"], "fp32")

    def test_l0_ci_tier_is_kept_apart_from_the_normal_profile(self, checkout: Path) -> None:
        """`ci_tier: l0_only` makes an L0 CI tier, not a partial model; the full profile stays normal."""
        inv = inventory_of(checkout)
        r = row(inv, "acme/plexy-7b")
        assert (r.profile, r.full_model_coverage, r.l0_tier_profiles) == ("plexy-7b", True, ["plexy-7b-l0"])
        [v] = [v for v in inv.variants if v.checkpoint == "acme/plexy-7b"]
        assert (v.kinds, v.differs, v.ci_tier) == (["l0-ci-tier"], ["L0 CI tier (ci_tier l0_only)"], "ci_tier l0_only")
        assert "- L0 CI tier (does not establish coverage): `plexy-7b-l0`" in to_markdown(inv)


class TestFindings:
    def test_built_but_unloaded_audio_encoder_is_a_cited_gap(self, checkout: Path) -> None:
        """The family builds audio_encoder_plan, the runtime loads only two other sections, and the pipeline
        takes a prompt only: the gap says so with file and line for each step."""
        r = row(inventory_of(checkout), "acme/Qwenish-Omni-30B-Instruct")
        assert r.gap.startswith("audio encoder built but never loaded by the runtime; no audio input reaches the "
                                "model: python/pkgish/families/omnish/plugin.py writes `audio_encoder_plan` (line 4)"
                                ", but the runtime loads only `code2wav_engine_plan`, `engine_plan` "
                                "(src/runtime/models/omnish/plugin.cpp line 1, 2)")
        assert "pipeline.h exposes only generate_audio(const std::string& prompt), none taking audio" in r.gap
        cites = {(e.file, e.field) for e in r.gaps[0].evidence}
        assert {("python/pkgish/families/omnish/plugin.py", "line 4"),
                ("src/runtime/models/omnish/omni_audio_plan.h", "line 1"),
                ("src/runtime/models/omnish/plugin.cpp", "line 1"),
                ("src/runtime/models/omnish/pipeline.h", "line 3")} <= cites

    def test_a_loaded_encoder_is_no_finding(self, checkout: Path) -> None:
        """Once the runtime loads the audio section, only the class's own reason remains."""
        cpp = checkout / "src/runtime/models/omnish/plugin.cpp"
        cpp.write_text(cpp.read_text() + "auto enc = load(find_section(ctx.bundle, \"audio_encoder_plan\"));\n")
        r = row(inventory_of(checkout), "acme/Qwenish-Omni-30B-Instruct")
        assert r.gap.startswith("speech output only") and len(r.gaps) == 1

    def test_one_clip_through_two_paths_is_counted_once(self, checkout: Path) -> None:
        """The external source path of the packaged clip is its provenance, not a second input."""
        r = row(inventory_of(checkout), "acme/Chatty-11B")
        assert r.audio_inputs == ["tests/e2e/models/chatty/assets/sample_talk_input.flac"]
        [same] = r.same_clip
        assert same.field == "testcases[0].inputs.speech_source_relative_path"
        assert "sample_talk.wav is the source of" in str(same.value)

    def test_owner_status_is_shown_with_file_and_line(self, checkout: Path) -> None:
        """The support matrix's Red and 'Coming soon' rows appear beside ours, cited."""
        inv = inventory_of(checkout)
        [omni] = row(inv, "acme/Qwenish-Omni-30B-Instruct").owner_status
        assert (omni.file, omni.line, omni.platforms) == ("website/data/model-support-matrix.md", 6, {"GB300": "Red"})
        [whispy] = row(inv, "acme/whispy-large").owner_status
        assert whispy.provider == "Edgy runtime; Dispatch: Coming soon"
        assert "GB300 Red (`website/data/model-support-matrix.md` line 6)" in to_markdown(inv)

    def test_model_with_audio_only_in_its_output_is_listed_as_considered(self, checkout: Path) -> None:
        """A text-to-video-and-audio model is not in the group, but the report lists it with its reason."""
        inv = inventory_of(checkout)
        assert "acme/mediamax" not in {r.checkpoint.lower() for r in inv.rows}
        [c] = inv.considered
        assert (c.checkpoint, c.capability_class, c.evidence[0].field) == (
            "acme/MediaMax", "vision-language", "testcases[0].description")
        assert c.reason.startswith("audio appears only in what it makes or ships")
        assert "- **acme/MediaMax** (`mediamax-768p`, vision-language): audio appears only" in to_markdown(inv)


class TestReadability:
    def test_main_table_has_six_columns_and_marks_candidates(self, checkout: Path) -> None:
        md = to_markdown(inventory_of(checkout, candidates=["acme/plexy-7b", "acme/MediaMax"]))
        assert "| checkpoint | class | status | normal profile | native Task | gap |" in md
        assert "| acme/plexy-7b (candidate) | spoken-dialogue | unsupported | plexy-7b | speech_to_speech |" in md
        assert "| acme/MediaMax (candidate, outside the group) | vision-language |" in md
        table = md.split("## Checkpoints", 1)[1].split("##", 1)[0]
        assert max(len(line) for line in table.splitlines()) < 250

    def test_nearest_only_within_the_same_family_and_size(self, checkout: Path) -> None:
        """Another size or generation is another model: no suggestion; the same family and size is one."""
        inv = inventory_of(checkout, candidates=["acme/Qwenish-Omni-30B-Thinking", "acme/Qwenish-Omni-7B",
                                                 "acme/plexy-2-7b"])
        thinking = row(inv, "acme/Qwenish-Omni-30B-Thinking")
        assert "nearest checkpoints here: acme/Qwenish-Omni-30B-Instruct" in thinking.gap
        assert "nearest checkpoints" not in row(inv, "acme/Qwenish-Omni-7B").gap
        assert "nearest checkpoints" not in row(inv, "acme/plexy-2-7b").gap

    def test_html_escapes_everything(self, checkout: Path) -> None:
        odd = {**WHISPY, "name": "odd", "hf_id": "acme/<script>x</script>", "task_strategy": "speech_to_text"}
        write_tree(checkout, {M.format(fam="whispy", name="odd"): odd})
        page = to_html(inventory_of(checkout))
        assert "<script>" not in page and "acme/&lt;script&gt;x&lt;/script&gt;" in page
        assert page.startswith("<!DOCTYPE html>") and "<h2>Considered, not in the group</h2>" in page


class TestBareAndReconcile:
    def test_bare_repository_is_read_at_head(self, checkout: Path, tmp_path: Path) -> None:
        git(checkout, "init", "-q")
        sha = commit_all(checkout, "one")
        bare = tmp_path / "bare.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(checkout), str(bare)], check=True, capture_output=True)
        docs, source = read_tree(bare)
        assert (source.bare, source.commit, source.rev, source.read_via) == (True, sha, "HEAD", "git")
        assert len(docs) == 7
        inv = inventory_of(bare)
        assert row(inv, "acme/Qwenish-Omni-30B-Instruct").gap.startswith("audio encoder built but never loaded")
        assert "read from a bare git repository, read at its HEAD" in to_markdown(inv)

    def test_against_lists_changes_and_exits_1_when_a_group_checkpoint_changes_class(
            self, checkout: Path, tmp_path: Path) -> None:
        git(checkout, "init", "-q")
        first = commit_all(checkout, "one")
        write_tree(checkout, {M.format(fam="whispy", name="whispy-large"): {**WHISPY, "precision": "fp16"}})
        second = commit_all(checkout, "two: precision only")
        write_tree(checkout, {M.format(fam="plexy", name="plexy-7b"): {**PLEXY, "task_strategy": "audio_text_to_text"},
                              M.format(fam="newby", name="newby-1b"): {**WHISPY, "name": "newby-1b",
                                                                       "hf_id": "acme/newby-1b", "family": "newby"}})
        third = commit_all(checkout, "three: plexy becomes audio QA")
        old = tmp_path / "old.json"
        assert main(["inventory", "--trtmc", str(checkout), "--rev", first, "--json", str(old)]) == 0
        md2 = tmp_path / "two.md"
        assert main(["inventory", "--trtmc", str(checkout), "--rev", second, "--against", str(old),
                     "--markdown", str(md2)]) == 0
        text = md2.read_text()
        assert "- group changed (exit 1): no" in text
        assert "| acme/whispy-large | yes | precision | fp32 | fp16 |" in text
        md3 = tmp_path / "three.md"
        assert main(["inventory", "--trtmc", str(checkout), "--rev", third, "--against", str(old),
                     "--markdown", str(md3)]) == 1
        text = md3.read_text()
        assert "- group changed (exit 1): YES" in text and "- added: acme/newby-1b" in text
        assert "- reclassified (class or status): acme/plexy-7b" in text
        assert "| acme/plexy-7b | yes | class | spoken-dialogue | audio-qa |" in text
        assert "| acme/plexy-7b | yes | native Task | speech_to_speech | audio_text_to_text |" in text

    def test_a_schema_1_inventory_is_a_valid_old_side(self, checkout: Path, tmp_path: Path) -> None:
        """An inventory written before schema 2 (no gaps, owner status, considered) still reconciles, and the
        command writes the HTML page beside it."""
        git(checkout, "init", "-q")
        first = commit_all(checkout, "one")
        new = tmp_path / "new.json"
        assert main(["inventory", "--trtmc", str(checkout), "--rev", first, "--json", str(new)]) == 0
        data = json.loads(new.read_text())
        data["schema_version"] = 1
        for key in ("considered", "precision_default"):
            del data[key]
        for r in data["rows"]:
            for key in ("precision_source", "gaps", "owner_status", "l0_tier_profiles", "same_clip"):
                del r[key]
        for v in data["variants"]:
            for key in ("differs", "context_parallel", "ci_tier", "precision_source"):
                del v[key]
        old = tmp_path / "old.json"
        old.write_text(json.dumps(data))
        md, page = tmp_path / "diff.md", tmp_path / "inv.html"
        assert main(["inventory", "--trtmc", str(checkout), "--rev", first, "--against", str(old),
                     "--markdown", str(md), "--html", str(page)]) == 0
        text = md.read_text()
        assert "- reclassified (class or status): none" in text
        # Variants compare by axes and values: the old side's missing `differs` phrases are no change.
        assert "| variants |" not in text
        assert "- note: gaps not compared: the old inventory (schema 1) has no gap kinds" in text
        assert "<h1>Audio-QA inventory of a TRTMC checkout</h1>" in page.read_text()

    def test_an_unreadable_old_inventory_is_a_usage_error(self, checkout: Path, tmp_path: Path) -> None:
        (tmp_path / "old.json").write_text('{"rows": 3}')
        with pytest.raises(InventoryError, match="not an inventory JSON"):
            main(["inventory", "--trtmc", str(checkout), "--against", str(tmp_path / "old.json")])

    def test_help_documents_exit_codes(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit):
            main(["inventory", "--help"])
        out = capsys.readouterr().out
        assert "exit codes:\n  0  every checkpoint accounted for" in out and "\n  1  " in out and "--against OLD.json" in out
