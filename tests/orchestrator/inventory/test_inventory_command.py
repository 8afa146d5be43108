"""The `aqbench inventory` command: its outputs, exit codes and the repository's bench.toml candidates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
from inventory_support import BENCH_TOML, NEW, WHISPERISH, full_audit, main, manifests, write_tree

from orchestrator.inventory import Inventory, to_json, to_markdown


class TestCommand:
    def test_markdown_and_json_outputs_exit_1_with_error_rows(self, tmp_path: Path) -> None:
        """The command writes both outputs; the broken manifest makes it exit 1."""
        trtmc = write_tree(tmp_path / "trtmc", manifests())
        (tmp_path / "bench.toml").write_text(BENCH_TOML)
        code = main(["inventory", "--trtmc", str(trtmc), "--config", str(tmp_path / "bench.toml"),
                     "--json", str(tmp_path / "inv.json"), "--markdown", str(tmp_path / "inv.md")])
        assert code == 1
        data = json.loads((tmp_path / "inv.json").read_text())
        assert data["schema_version"] == 3 and not data["accounted"]
        assert {r["checkpoint"] for r in data["rows"]} >= {"acme/aqaish-1b", "acme/not-in-trtmc"}
        md = (tmp_path / "inv.md").read_text()
        assert "| acme/aqaish-1b | audio-qa | planned | aqaish-1b | audio_text_to_text | - |" in md
        assert ("- blocked by route: no served route: the checkout has no served chat schema (no trtmc-server front "
                "end) (apps/server/python/trtmc_server/schemas.py is absent)") in md
        assert "(unreadable)" in md and "`reference-audioqa (aqbench/reference-cascade)`" in md

    def test_clean_tree_exits_0_in_a_subprocess(self, tmp_path: Path) -> None:
        """Without broken manifests every checkpoint is accounted for and the real CLI exits 0."""
        files = {k: v for k, v in manifests().items() if "brokenish" not in k and "anonymous" not in k}
        trtmc = write_tree(tmp_path / "trtmc", files)
        (tmp_path / "bench.toml").write_text(BENCH_TOML)
        proc = subprocess.run([sys.executable, "-m", "orchestrator", "--log-format", "json", "inventory",
                               "--trtmc", str(trtmc), "--config", str(tmp_path / "bench.toml"), "--json", "-"],
                              capture_output=True, timeout=60, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()
        inv = msgspec.json.decode(proc.stdout, type=Inventory)
        assert inv.accounted and not inv.errors and len(inv.rows) == 10

    def test_default_bench_toml_candidates_are_always_rows(self, tmp_path: Path) -> None:
        """The repository's bench.toml candidates appear even when the checkout lacks them."""
        trtmc = write_tree(tmp_path / "trtmc", {NEW.format(fam="w", name="w"): WHISPERISH})
        out = tmp_path / "inv.json"
        bench = Path(__file__).resolve().parents[3] / "bench.toml"
        assert main(["inventory", "--trtmc", str(trtmc), "--config", str(bench), "--json", str(out)]) == 0
        rows = {r["checkpoint"]: r for r in json.loads(out.read_text())["rows"]}
        for cand in ("Qwen/Qwen3-Omni-30B-A3B-Instruct", "microsoft/Phi-4-multimodal-instruct",
                     "nvidia/NVIDIA-NemotronLabs-VoiceChat-11B", "nvidia/personaplex-7b-v1", "google/gemma-4-E4B-it"):
            assert rows[cand]["status"] == "unsupported" and "no manifest in this TRTMC checkout" in rows[cand]["gap"]

    def test_render_is_deterministic(self) -> None:
        """Rendering the same audit twice gives identical bytes (reports can be diffed)."""
        assert to_json(full_audit()) == to_json(full_audit())
        assert to_markdown(full_audit()) == to_markdown(full_audit())
