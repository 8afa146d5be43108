"""`aqbench inventory`'s audit: classes and statuses, variants, the shapes TRTMC main uses, task declarations,
errors and evidence (probes, the tree and the command have files of their own)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from inventory_support import (
    NEW,
    OLD,
    WHISPERISH,
    docs_of,
    full_audit,
    git,
    manifests,
    row,
    variant,
    write_tree,
)

from orchestrator.inventory import (
    CAPABILITY_CLASSES,
    STATUSES,
    ConfiguredModel,
    Inventory,
    TreeSource,
    audit,
    read_task_sources,
    read_tree,
    to_markdown,
)


class TestClassesAndStatuses:
    def test_transcription_checkpoint_is_unsupported_with_its_gap(self) -> None:
        """A speech_to_text manifest is transcription-only and unsupported: no question input."""
        r = row(full_audit(), "acme/whisperish-tiny")
        assert (r.capability_class, r.status) == ("transcription-only", "unsupported")
        assert r.gap.startswith("transcription only: no question input")
        assert r.profile == "whisperish-tiny-fp16" and r.full_model_coverage
        assert (r.task_strategy, r.runtime_strategy, r.precision, r.cache_length) == (
            "speech_to_text", "whisperish_speech_to_text", "fp16", 64)
        assert r.user_contracts == ["exact_transcript"] and r.audio_inputs == ["data/clip.wav"]

    def test_speech_output_checkpoint_from_older_layout(self) -> None:
        """A text_to_audio manifest in tests/e2e/models is speech-output-only."""
        r = row(full_audit(), "acme/barkish-small")
        assert (r.capability_class, r.status) == ("speech-output-only", "unsupported")
        assert r.file.startswith("tests/e2e/models/barkish/")
        assert "no audio input" in r.gap

    def test_spoken_dialogue_checkpoints_in_both_layouts(self) -> None:
        """Speech-to-speech manifests are spoken-dialogue: no text question, only a system prompt."""
        inv = full_audit()
        for ckpt in ("acme/personaplexish-7b", "acme/voicechatish"):
            r = row(inv, ckpt)
            assert (r.capability_class, r.status) == ("spoken-dialogue", "unsupported"), ckpt
            assert "no text question" in r.gap
        assert row(inv, "acme/personaplexish-7b").audio_inputs == ["data/hello.wav"]

    def test_omni_thinker_is_text_only(self) -> None:
        """An omni checkpoint served as a text thinker is in the group and text-only, no audio path."""
        r = row(full_audit(), "acme/omnish-30b")
        assert (r.capability_class, r.status, r.revision) == ("text-only", "unsupported", "abc")
        assert r.in_audio_group and r.candidate == "omnish-30b-thinker"
        assert r.cache_length == 256 and "no audio input exposed" in r.gap
        # Without the family's files nothing shows why no audio reaches it: the row says so.
        assert "no support.py, build or runtime file of family `omnish` was read" in " ".join(r.notes)

    def test_vision_language_candidate_states_audio_not_exposed(self) -> None:
        """A candidate outside the audio group still gets a row saying its audio is not exposed."""
        r = row(full_audit(), "acme/Phi4ish-multimodal-instruct")
        assert (r.capability_class, r.status) == ("vision-language", "unsupported")
        assert not r.in_audio_group and r.candidate == "acme/phi4ish-multimodal-instruct"
        assert r.gap.startswith("audio not exposed by this TRTMC family")

    def test_audio_qa_not_configured_is_blocked(self) -> None:
        """An audio_answer contract with audio inputs is audio-qa; with no served route and no owners' gate in
        the checkout it is blocked by both, each citing where it looked."""
        r = row(full_audit(), "acme/gemmaish-e4b")
        assert (r.capability_class, r.status) == ("audio-qa", "blocked")
        assert r.gap.startswith("audio_answer (testcases[0].user_contract) declared, but no served route: the "
                                "checkout has no served chat schema")
        assert [b.kind for b in r.blockers] == ["route", "gate"]
        assert {(e.claim, e.file) for e in r.evidence if e.claim.startswith("status:blocked")} == {
            ("status:blocked:route", "apps/server/python/trtmc_server/schemas.py"),
            ("status:blocked:gate", "apps/aiperf_qual/config/tasks.yaml")}

    def test_audio_qa_configured_is_planned(self) -> None:
        """An audio_text_to_text checkpoint configured in bench.toml and never run is planned, without gap."""
        r = row(full_audit(), "acme/aqaish-1b")
        assert (r.capability_class, r.status, r.gap) == ("audio-qa", "planned", "")
        assert r.configured_as == ["aqa"]
        assert any(e.claim == "status:planned" and e.field == "models[0].checkpoint" for e in r.evidence)
        assert {(c.kind, c.field) for c in r.controls} == {("max_new_tokens", "max_new_tokens"),
                                                           ("sampling", "top_p")}

    def test_candidate_absent_from_checkout_has_explicit_gap(self) -> None:
        """A candidate no manifest names is a row whose gap says no manifest in the checkout names it."""
        r = row(full_audit(), "acme/not-in-trtmc")
        assert (r.capability_class, r.status, r.file) == ("unknown", "unsupported", "")
        assert r.gap.startswith("no manifest in this TRTMC checkout (/fixture) names acme/not-in-trtmc") and r.accounted

    def test_every_class_is_reachable(self) -> None:
        """The fixture covers every class except unknown; an unclassifiable audio manifest is unknown."""
        seen = {r.capability_class for r in full_audit().rows if r.file}
        # The generator classes are reached by the current-layout fixture (test_inventory_families.py).
        assert seen == set(CAPABILITY_CLASSES) - {"unknown", "voice-cloning", "music-generation",
                                                  "audio-video-generation"}
        odd = {"name": "odd", "hf_id": "acme/odd", "family": "odd", "test_input_audio": "x.wav"}
        inv = audit(docs_of({NEW.format(fam="odd", name="odd"): odd}), source=TreeSource(root="/x"))
        assert inv.rows[0].capability_class == "unknown" and not inv.rows[0].accounted and not inv.accounted

    def test_group_excludes_unrelated_models_and_counts_one_row_per_checkpoint(self) -> None:
        """Non-audio, non-candidate manifests are left out; variants never become rows."""
        inv = full_audit()
        names = sorted(r.checkpoint.lower() for r in inv.rows)
        assert names == sorted([
            "acme/aqaish-1b", "acme/barkish-small", "acme/gemmaish-e4b", "acme/not-in-trtmc",
            "acme/omnish-30b", "acme/personaplexish-7b", "acme/phi4ish-multimodal-instruct",
            "acme/voicechatish", "acme/whisperish-small", "acme/whisperish-tiny",
        ])
        assert inv.manifests_scanned == 16
        assert set(STATUSES) >= {r.status for r in inv.rows}


class TestVariantsAndNormalProfile:
    def test_tp_l0_probe_and_precision_profiles_are_variants(self) -> None:
        """TP, L0, probe and fp32 profiles of one checkpoint are variants of the fp16 normal profile."""
        inv = full_audit()
        kinds = {v.profile: v.kinds for v in inv.variants if v.checkpoint == "acme/whisperish-tiny"}
        assert kinds == {
            "whisperish-tiny-fp16-tp2": ["tensor-parallel"],
            "whisperish-tiny-fp16-l0": ["l0-ci-tier"],
            "whisperish-tiny-fp16-asr-probe01": ["partial"],
            "whisperish-tiny-fp32": ["precision"],
        }
        assert all(v.normal_profile == "whisperish-tiny-fp16" for v in inv.variants
                   if v.checkpoint == "acme/whisperish-tiny")
        # The TP manifest had no hf_revision; it joined the single pinned revision r1.
        assert row(inv, "acme/whisperish-tiny").revision == "r1"

    def test_family_default_precision_picks_the_normal_profile(self) -> None:
        """When fp32 is the family's usual precision, the fp32 profile becomes normal and fp16 the variant."""
        files = {NEW.format(fam="w", name=n): variant(WHISPERISH, name=n, hf_id=h, precision=p)
                 for n, h, p in (("a-fp16", "acme/a", "fp16"), ("a-fp32", "acme/a", "fp32"),
                                 ("b-fp32", "acme/b", "fp32"), ("c-fp32", "acme/c", "fp32"))}
        inv = audit(docs_of(files), source=TreeSource(root="/x"))
        assert row(inv, "acme/a").profile == "a-fp32"
        assert [(v.profile, v.kinds) for v in inv.variants] == [("a-fp16", ["precision"])]

    def test_partial_only_checkpoint_is_not_full_model_coverage(self) -> None:
        """A checkpoint with only an L0 profile gets a row marked as not full-model coverage."""
        files = {NEW.format(fam="w", name="z-l0"): variant(WHISPERISH, name="z-l0", hf_id="acme/z")}
        r = audit(docs_of(files), source=TreeSource(root="/x")).rows[0]
        assert r.profile == "z-l0" and not r.full_model_coverage
        assert any("no full-model profile" in n for n in r.notes)


class TestShapesSeenInTrtmcMain:
    """Shapes found when the audit was run over TRTMC main's manifests (our own manifests in those shapes)."""

    SESSION = {
        "name": "voicey-11b", "hf_id": "acme/Voicey-11B", "hf_revision": "r9", "family": "voicey",
        "task": "speech_session", "precision": "fp32", "tensor_parallel_size": 1,
        "testcases": [{"name": "t0", "max_new_tokens": 256,
                       "inputs": {"reference_audio": "assets/answer_reference.flac",
                                  "speech_source_relative_path": "samples/question.wav",
                                  "runtime_timeout_s": 1800}}],
    }

    def test_speech_session_is_spoken_dialogue_and_reference_audio_is_not_an_input(self) -> None:
        """`task: speech_session` is a spoken dialogue; the reference output it is compared with is
        evidence, not an audio input, while the speech source is one."""
        r = audit(docs_of({NEW.format(fam="voicey", name="voicey-11b"): self.SESSION}),
                  source=TreeSource(root="/x")).rows[0]
        assert (r.capability_class, r.status) == ("spoken-dialogue", "unsupported") and r.accounted
        assert r.audio_inputs == ["samples/question.wav"]
        assert any(e.claim == "class:spoken-dialogue" and e.field == "task" for e in r.evidence)

    def test_l0_replacement_marks_the_full_profile_not_a_partial_one(self) -> None:
        """`l0_replacement` names the PR-CI stand-in: the profile carrying it is the full normal profile."""
        full = {"name": "plexy-7b", "hf_id": "acme/plexy-7b", "family": "plexy", "task_strategy": "speech_to_speech",
                "precision": "bf16", "ci_tier": "nightly_only", "l0_replacement": "plexy-7b-l0",
                "user_contract": "speech_response", "inputs": {"audio": "a.wav"}}
        files = {OLD.format(fam="plexy", name="plexy-7b"): full,
                 OLD.format(fam="plexy", name="plexy-7b-l0"): variant(full, name="plexy-7b-l0", l0_replacement=None)}
        inv = audit(docs_of(files), source=TreeSource(root="/x"))
        r = inv.rows[0]
        assert (r.profile, r.full_model_coverage, r.variants) == ("plexy-7b", True, ["plexy-7b-l0"])
        assert inv.variants[0].kinds == ["l0-ci-tier"]

    def test_nested_runtime_settings_are_controls_and_nested_tp_is_tensor_parallel(self) -> None:
        """Sampling under `runtime_config.<engine>` is read with its full field path; `build_args.parallel.tp_size`
        makes a tensor-parallel variant even without -tpN in the name."""
        base = {"name": "maggy-357m", "hf_id": "acme/maggy", "family": "maggy", "task_strategy": "text_to_audio",
                "precision": "fp32",
                "testcases": [{"name": "t0", "prompt": "Hello.", "user_contract": "tts_audio", "max_new_tokens": 500,
                               "runtime_config": {"audio_maggy": {"temperature": 0.6, "seed": 42}}}]}
        files = {NEW.format(fam="maggy", name="maggy-357m"): base,
                 NEW.format(fam="maggy", name="maggy-357m-wide"): variant(
                     base, name="maggy-357m-wide", build_args={"parallel": {"tp_size": 2}})}
        inv = audit(docs_of(files), source=TreeSource(root="/x"))
        r = inv.rows[0]
        fields = {c.field: (c.kind, c.values, c.evidence[0].field) for c in r.controls}
        assert fields["temperature"] == ("sampling", [0.6], "testcases[0].runtime_config.audio_maggy.temperature")
        assert fields["seed"] == ("sampling", [42], "testcases[0].runtime_config.audio_maggy.seed")
        assert fields["max_new_tokens"][:2] == ("max_new_tokens", [500])
        assert r.profile == "maggy-357m" and inv.variants[0].kinds == ["tensor-parallel"]
        assert inv.variants[0].tensor_parallel == 2

    def test_a_skipped_profile_says_so_in_its_gap(self) -> None:
        """A manifest's `skip` reason is evidence and is spelled out in the row's gap and notes."""
        omni = {"name": "omnish", "hf_id": "acme/omnish", "family": "omnish", "task_strategy": "omni_multimodal",
                "user_contract": "tts_audio", "prompt": "Say hi.",
                "skip": "Native talker is not implemented; audio generation fails closed."}
        r = audit(docs_of({OLD.format(fam="omnish", name="omnish"): omni}), source=TreeSource(root="/x")).rows[0]
        assert r.capability_class == "speech-output-only"
        assert r.gap.endswith("and the manifest skips it: Native talker is not implemented; audio generation fails "
                              "closed.")
        assert any(e.claim == "skip" and e.field == "skip" for e in r.evidence)

    def test_absent_candidate_names_the_nearest_checkpoints(self) -> None:
        """A candidate spelled unlike any hf_id stays absent (ids are identities) but the gap names the
        checkpoint it most likely means."""
        inv = audit(docs_of({NEW.format(fam="voicey", name="voicey-11b"): self.SESSION}),
                    source=TreeSource(root="/x"), candidates=["acme/Voicey", "acme/nothing-alike"])
        near = row(inv, "acme/Voicey")
        assert near.status == "unsupported" and "nearest checkpoints here: acme/Voicey-11B" in near.gap
        assert "nearest checkpoints" not in row(inv, "acme/nothing-alike").gap


# A family whose sources declare and bind audio_text_to_text, with no manifest for the checkpoints its
# README names (how TRTMC main carries Gemma 4 through Edge-LLM); our own files in that shape.
EDGY_SOURCES = {
    "families/edgy/support.py": ('def describe(metadata):\n    tasks = ["text_generation"]\n'
                                 '    if metadata.config.get("audio_config"):\n'
                                 '        tasks.append("audio_text_to_text")\n    return tasks\n'),
    "families/edgy/runtime/edge/adapter.cpp": ("    if (audio_)\n"
                                               "        out.push_back(api::bind<api::IAudioTextToText>(*this, f));\n"),
    "families/edgy/edge/README.md": ("| Checkpoint | Works | Fails |\n| --- | --- | --- |\n"
                                     "| acme/edgy-4-e2b-it | text and audio | image |\n"
                                     "| acme/edgy-4-e4b-it | image | text/audio |\n"
                                     "| acme/edgy-4-vision | image | text |\n"),
    # Test fixtures bind everything: never a declaration.
    "families/edgy/tests/fixture.cpp": "api::bind<api::IAudioVideoTextToText>(*this, f);\n",
    # Declared but never bound: not a declaration either.
    "families/halfy/support.py": 'tasks = ("audio_text_to_text",)\n',
    "families/halfy/README.md": "| acme/halfy-1b | audio |\n",
}


class TestTaskDeclarations:
    def _inventory(self, tmp_path: Path, *, rev: str = "", candidates: Sequence[str] = ()) -> Inventory:
        root = write_tree(tmp_path / "trtmc", {**manifests(), **EDGY_SOURCES})
        if rev:
            git(root, "init", "-q")
            git(root, "add", "-A")
            git(root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "snapshot")
        docs, source = read_tree(root, rev)
        return audit(docs, source=source, candidates=candidates, task_sources=read_task_sources(source))

    @pytest.mark.parametrize("rev", ["", "HEAD"])
    def test_declared_and_bound_task_without_manifest_is_blocked(self, tmp_path: Path, rev: str) -> None:
        """Checkpoints named on the README's audio rows of a family that declares and binds
        audio_text_to_text get blocked audio-qa rows with file:line evidence, from the folder and at a revision."""
        inv = self._inventory(tmp_path, rev=rev, candidates=["acme/edgy-4-e4b-it"])
        declared = {r.checkpoint: r for r in inv.rows if r.family in ("edgy", "halfy")}
        assert sorted(declared) == ["acme/edgy-4-e2b-it", "acme/edgy-4-e4b-it"]  # not the image-only row
        r = declared["acme/edgy-4-e4b-it"]
        assert (r.capability_class, r.status, r.candidate, r.profile) == ("audio-qa", "blocked", "acme/edgy-4-e4b-it", "")
        assert r.gap.startswith("audio_text_to_text declared in families/edgy/support.py (line 4, only if "
                                "metadata.config.get('audio_config')) and bound in "
                                "families/edgy/runtime/edge/adapter.cpp (line 2); no manifest builds or tests "
                                "acme/edgy-4-e4b-it; blocked by route: no served route: the checkout has no served chat "
                                "schema")
        assert [b.kind for b in r.blockers] == ["route", "gate", "quality"]
        # Declared but never bound: listed as a family note, never dropped.
        [half] = [n for n in inv.family_notes if n.family == "halfy"]
        assert half.text.startswith("declares `audio_text_to_text` (families/halfy/support.py line 1) but no runtime "
                                    "file binds it") and half.accounted
        assert [(e.claim, e.file, e.field) for e in r.evidence[:3]] == [
            ("checkpoint", "families/edgy/edge/README.md", "line 4"),
            ("class:audio-qa", "families/edgy/support.py", "line 4"),
            ("class:audio-qa", "families/edgy/runtime/edge/adapter.cpp", "line 2")]
        assert not any(r.checkpoint == "acme/edgy-4-e4b-it" and not r.file for r in inv.rows)  # no bare candidate row
        assert "| acme/edgy-4-e4b-it (candidate) | audio-qa | blocked | (no manifest) | audio_text_to_text |" in to_markdown(inv)

    def test_configured_declared_checkpoint_is_planned(self, tmp_path: Path) -> None:
        root = write_tree(tmp_path / "trtmc", {**manifests(), **EDGY_SOURCES})
        docs, source = read_tree(root)
        inv = audit(docs, source=source, task_sources=read_task_sources(source),
                    models=[ConfiguredModel(name="e", checkpoint="acme/edgy-4-e2b-it", config_path="b.toml")])
        assert row(inv, "acme/edgy-4-e2b-it").status == "planned"
        assert not inv.reconciliation.configured_absent_from_checkout


class TestErrorsAndEvidence:
    def test_broken_and_anonymous_manifests_are_error_rows(self) -> None:
        """Unparsable JSON and an audio manifest without hf_id become error rows, and exit would be 1."""
        inv = full_audit()
        errors = {e.file: e.error for e in inv.errors}
        assert errors[NEW.format(fam="brokenish", name="brokenish")].startswith("not valid JSON")
        assert "without hf_id" in errors[OLD.format(fam="anonymous", name="anonymous-asr")]
        assert not inv.accounted and len(inv.unaccounted) == 2

    def test_wrongly_typed_field_names_the_field(self) -> None:
        """A manifest whose testcases is not a list is an error row naming that field."""
        files = {NEW.format(fam="x", name="x"): {"name": "x", "hf_id": "acme/x", "testcases": "oops"}}
        inv = audit(docs_of(files), source=TreeSource(root="/x"))
        assert inv.errors[0].error == "field testcases is str, expected a list"

    def test_every_claim_carries_file_and_field(self) -> None:
        """Each row's task, runtime, contract, precision, cache, audio and class claims cite file and field."""
        r = row(full_audit(), "acme/aqaish-1b")
        cites = {(e.claim, e.field) for e in r.evidence}
        assert {("task_strategy", "task_strategy"), ("runtime_strategy", "runtime_strategy"),
                ("user_contract", "testcases[0].user_contract"), ("precision", "precision"),
                ("cache_length", "max_cache_length"), ("audio_input", "testcases[0].test_input_audio"),
                ("class:audio-qa", "task_strategy")} <= cites
        assert all(e.file == NEW.format(fam="aqaish", name="aqaish-1b") for e in r.evidence
                   if not e.claim.startswith("status"))

    def test_reconciliation_lists_both_sides(self) -> None:
        """Group checkpoints missing from [[models]] and configured models absent from TRTMC are listed."""
        rec = full_audit().reconciliation
        assert "acme/whisperish-tiny@r1" in rec.group_missing_from_config
        assert "acme/aqaish-1b" not in rec.group_missing_from_config
        assert rec.configured_absent_from_checkout == ["reference-audioqa (aqbench/reference-cascade)"]
        assert rec.configured_outside_group == ["bert (acme/bertish-base)"]
