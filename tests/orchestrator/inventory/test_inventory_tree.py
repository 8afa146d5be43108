"""`aqbench inventory` reading a TRTMC checkout: both manifest layouts from a folder or at a git revision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inventory_support import NEW, WHISPERISH, git, manifests, row, variant, write_tree

from orchestrator.base.errors import InventoryError
from orchestrator.inventory import audit, read_tree


class TestTree:
    def test_folder_reads_both_layouts_and_ignores_other_json(self, tmp_path: Path) -> None:
        """Manifests in both layouts are read; thresholds and deeper files are not manifests."""
        write_tree(tmp_path, manifests())
        write_tree(tmp_path, {"families/whisperish/tests/thresholds/x.json": {"hf_id": "nope"},
                              "families/whisperish/tests/manifests/sub/y.json": {"hf_id": "nope"}})
        docs, source = read_tree(tmp_path)
        assert len(docs) == 16 and {d.layout for d in docs} == {"families", "tests/e2e/models"}
        assert (source.commit, source.dirty, source.read_via) == ("", None, "folder")

    def test_git_revision_is_read_at_that_commit(self, tmp_path: Path) -> None:
        """Auditing the first of two commits sees only its manifests and records its sha."""
        files = manifests()
        first = {k: v for k, v in files.items() if "whisperish" in k or "brokenish" in k}
        write_tree(tmp_path, first)
        git(tmp_path, "init", "-q")
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", "one")
        sha1 = git(tmp_path, "rev-parse", "HEAD")
        write_tree(tmp_path, files)
        (tmp_path / NEW.format(fam="whisperish", name="whisperish-tiny-fp16")).write_text(
            json.dumps(variant(WHISPERISH, task_strategy="audio_text_to_text")))
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", "two")
        docs, source = read_tree(tmp_path, sha1[:10])
        assert (source.commit, source.rev, source.read_via) == (sha1, sha1[:10], "git")
        assert sorted(d.path for d in docs) == sorted(first)
        inv = audit(docs, source=source)
        assert row(inv, "acme/whisperish-tiny").capability_class == "transcription-only"
        assert [e.file for e in inv.errors] == [NEW.format(fam="brokenish", name="brokenish")]
        # The working folder shows the second commit, and a local edit marks it dirty.
        _, head = read_tree(tmp_path)
        assert head.commit != sha1 and head.dirty is False
        (tmp_path / NEW.format(fam="aqaish", name="aqaish-1b")).write_text("{}")
        assert read_tree(tmp_path)[1].dirty is True

    def test_bad_revision_and_empty_tree_are_errors(self, tmp_path: Path) -> None:
        """An unknown revision, a non-repository and a tree without manifests raise InventoryError."""
        with pytest.raises(InventoryError, match="no model manifests in either layout"):
            read_tree(tmp_path)
        with pytest.raises(InventoryError, match="not a git repository"):
            read_tree(tmp_path, "HEAD")
        write_tree(tmp_path, {NEW.format(fam="w", name="w"): WHISPERISH})
        git(tmp_path, "init", "-q")
        with pytest.raises(InventoryError, match="revision 'nope' does not name a commit"):
            read_tree(tmp_path, "nope")
        with pytest.raises(InventoryError, match="no such folder"):
            read_tree(tmp_path / "missing")
