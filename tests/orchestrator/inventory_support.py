"""What the inventory tests (and the ledger's) build on: our own manifests in TRTMC's shapes, a tree written
from them, the audit and the command run on them."""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.commands import inventory as inventory_command
from orchestrator.commands import ledger as ledger_command
from orchestrator.inventory import (
    CheckpointRow,
    ConfiguredModel,
    Inventory,
    ManifestDocument,
    TreeSource,
    audit,
    read_code_sources,
    read_task_sources,
    read_tree,
)

NEW = "families/{fam}/tests/manifests/{name}.json"
OLD = "tests/e2e/models/{fam}/manifests/{name}.json"

# Our own manifests, written in the shapes TRTMC uses (never copies of its files).
WHISPERISH = {
    "name": "whisperish-tiny-fp16", "hf_id": "acme/whisperish-tiny", "hf_revision": "r1", "family": "whisperish",
    "runtime_strategy": "whisperish_speech_to_text", "task_strategy": "speech_to_text",
    "user_contract": "exact_transcript", "test_type": "transcription", "precision": "fp16",
    "max_cache_length": 64, "prompt": "test", "max_new_tokens": 10, "language": "en",
    "test_input_audio": "data/clip.wav",
}


def variant(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = {k: v for k, v in base.items() if k != "hf_revision" or "hf_revision" not in changes}
    out.update(changes)
    return {k: v for k, v in out.items() if v is not None}


def manifests() -> dict[str, Any]:
    """Relative path -> manifest (dict, or str for raw broken text), covering every class and variant kind."""
    m: dict[str, Any] = {}
    # transcription (newer layout) with TP, L0, probe and precision variants, plus a sibling checkpoint
    m[NEW.format(fam="whisperish", name="whisperish-tiny-fp16")] = WHISPERISH
    m[NEW.format(fam="whisperish", name="whisperish-tiny-fp16-tp2")] = variant(
        WHISPERISH, name="whisperish-tiny-fp16-tp2", tensor_parallel_size=2, hf_revision=None)
    m[NEW.format(fam="whisperish", name="whisperish-tiny-fp16-l0")] = variant(
        WHISPERISH, name="whisperish-tiny-fp16-l0")
    m[NEW.format(fam="whisperish", name="whisperish-tiny-fp32")] = variant(
        WHISPERISH, name="whisperish-tiny-fp32", precision="fp32")
    m[NEW.format(fam="whisperish", name="whisperish-tiny-fp16-asr-probe01")] = variant(
        WHISPERISH, name="whisperish-tiny-fp16-asr-probe01", l0_replacement="whisperish-tiny-fp16")
    m[NEW.format(fam="whisperish", name="whisperish-small-fp16")] = variant(
        WHISPERISH, name="whisperish-small-fp16", hf_id="acme/whisperish-small", hf_revision=None)
    # speech output (older layout, testcases list)
    m[OLD.format(fam="barkish", name="barkish-small")] = {
        "name": "barkish-small", "hf_id": "acme/barkish-small", "family": "barkish", "task": "text_to_audio",
        "precision": "fp32", "testcases": [{"name": "t0", "prompt": "Hello there.", "max_new_tokens": 768,
                                            "seed": 0, "user_contract": "tts_audio", "test_type": "audio"}],
    }
    # spoken dialogue, one in each layout
    m[NEW.format(fam="personaplexish", name="personaplexish-7b")] = {
        "name": "personaplexish-7b", "hf_id": "acme/personaplexish-7b", "family": "personaplexish",
        "task_strategy": "speech_to_speech", "runtime_strategy": "duplex_speech_dialogue", "precision": "bf16",
        "testcases": [{"name": "t0", "user_contract": "speech_response", "system_prompt": "You are kind.",
                       "inputs": {"audio": "data/hello.wav"}}],
    }
    m[OLD.format(fam="voicechatish", name="voicechatish")] = {
        "name": "voicechatish", "hf_id": "acme/voicechatish", "family": "voicechatish",
        "runtime_strategy": "voicechat_pipeline", "precision": "bf16",
        "testcases": [{"name": "t0", "test_input_audio": "data/q.wav", "user_contract": "speech_response"}],
    }
    # text-only omni thinker
    m[NEW.format(fam="omnish", name="omnish-30b-thinker")] = {
        "name": "omnish-30b-thinker", "hf_id": "acme/omnish-30b", "hf_revision": "abc", "family": "omnish",
        "task_strategy": "omni_multimodal", "runtime_strategy": "omnish_thinker", "precision": "bf16",
        "max_sequence_length": 256, "tensor_parallel_size": 1,
        "testcases": [{"name": "t0", "prompt": "Say hello.", "max_new_tokens": 16,
                       "user_contract": "text_continuation", "temperature": 0.0}],
    }
    # vision-language with audio not exposed (not in the audio group; a candidate)
    m[NEW.format(fam="phi4ish", name="phi4ish-multimodal")] = {
        "name": "phi4ish-multimodal", "hf_id": "acme/Phi4ish-multimodal-instruct", "family": "phi4ish",
        "task_strategy": "vision_language_generation", "precision": "bf16",
        "testcases": [{"name": "t0", "prompt": "What is shown?", "test_image": "data/cat.png",
                       "user_contract": "vl_answer"}],
    }
    # genuine audio-QA checkpoints: one configured (planned), one not (blocked)
    m[NEW.format(fam="aqaish", name="aqaish-1b")] = {
        "name": "aqaish-1b", "hf_id": "acme/aqaish-1b", "family": "aqaish", "task_strategy": "audio_text_to_text",
        "runtime_strategy": "aqaish_audio_chat", "precision": "fp16", "max_cache_length": 2048,
        "testcases": [{"name": "t0", "user_contract": "vl_answer", "prompt": "How many beeps?",
                       "test_input_audio": "data/beeps.wav", "max_new_tokens": 8, "top_p": 1.0}],
    }
    m[OLD.format(fam="gemmaish", name="gemmaish-e4b")] = {
        "name": "gemmaish-e4b", "hf_id": "acme/gemmaish-e4b", "family": "gemmaish", "task": "omni_multimodal",
        "runtime_strategy": "edge_llm", "precision": "fp16",
        "testcases": [{"name": "t0", "user_contract": "audio_answer",
                       "inputs": {"audio": "data/q.wav", "text": "What animal is it?"}}],
    }
    # outside the group: a text model nobody asked for
    m[NEW.format(fam="bertish", name="bertish-base")] = {
        "name": "bertish-base", "hf_id": "acme/bertish-base", "family": "bertish", "task": "text_classification",
    }
    # unreadable and unidentifiable manifests
    m[NEW.format(fam="brokenish", name="brokenish")] = '{"name": "brokenish", "hf_id": '
    m[OLD.format(fam="anonymous", name="anonymous-asr")] = {"name": "anonymous-asr", "task": "speech_to_text"}
    return m


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return root


BENCH_TOML = """
[[models]]
name = "aqa"
family = "aqaish"
checkpoint = "acme/aqaish-1b"
profile = "aqaish-1b"
[models.correctness]
min_pass_rate = 0.9

[[models]]
name = "reference-audioqa"
family = "aqbench-reference"
checkpoint = "aqbench/reference-cascade"
[models.correctness]
min_pass_rate = 0.9

[[models]]
name = "bert"
family = "bertish"
checkpoint = "acme/bertish-base"
[models.correctness]
min_pass_rate = 0.9

[inventory]
candidates = ["acme/phi4ish-multimodal-instruct", "omnish-30b-thinker", "acme/not-in-trtmc"]
"""

MODELS = [
    ConfiguredModel(name="aqa", checkpoint="acme/aqaish-1b", profile="aqaish-1b", index=0, config_path="b.toml"),
    ConfiguredModel(name="reference-audioqa", checkpoint="aqbench/reference-cascade", index=1, config_path="b.toml"),
    ConfiguredModel(name="bert", checkpoint="acme/bertish-base", index=2, config_path="b.toml"),
]
CANDIDATES = ["acme/phi4ish-multimodal-instruct", "omnish-30b-thinker", "acme/not-in-trtmc"]


def main(argv: list[str]) -> int:
    """Run `aqbench inventory` or `aqbench ledger` in-process through their own parsers.

    (orchestrator.cli is not imported: under pytest `tests/orchestrator` shadows the package's __init__.)
    """
    parser = argparse.ArgumentParser(prog="aqbench")
    sub = parser.add_subparsers(dest="command")
    inventory_command.register(sub)
    ledger_command.register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


def inventory_of(root: Path, rev: str = "", candidates: Sequence[str] = ()) -> Inventory:
    """The audit of a checkout on disk (at `rev`, or its work tree), as `aqbench inventory` reads one."""
    docs, source = read_tree(root, rev)
    return audit(docs, source=source, candidates=list(candidates), task_sources=read_task_sources(source),
                 code=read_code_sources(source))


def docs_of(files: dict[str, Any]) -> list[ManifestDocument]:
    out = []
    for rel, content in files.items():
        layout = "families" if rel.startswith("families/") else "tests/e2e/models"
        fam = rel.split("/")[1] if layout == "families" else rel.split("/")[3]
        data = (content if isinstance(content, str) else json.dumps(content)).encode()
        out.append(ManifestDocument(path=rel, layout=layout, family_dir=fam, data=data))  # type: ignore[arg-type]
    return out


def full_audit(**kw: Any) -> Inventory:
    return audit(docs_of(manifests()), source=TreeSource(root="/fixture"), candidates=CANDIDATES,
                 models=MODELS, config_path="b.toml", **kw)


def row(inv: Inventory, checkpoint: str) -> CheckpointRow:
    found = [r for r in inv.rows if r.checkpoint.lower() == checkpoint.lower()]
    assert len(found) == 1, f"{checkpoint}: {len(found)} rows in {[r.checkpoint for r in inv.rows]}"
    return found[0]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()
