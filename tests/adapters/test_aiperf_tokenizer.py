"""aqbench's offline tokenizer as a private Hugging Face hub cache entry, and what AIPerf is given for it.

AIPerf 0.13.0 skips its tokenizer prefetch (a process that loads transformers, 1.1-2.0 s of each start-up) for a
name found in its hub cache; offline, it loads that name from the cache. These tests build the entry as aqbench
does and ask AIPerf's own functions, in a process with the command's environment, whether they accept it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.aiperf.command import build_command
from adapters.aiperf.tokenizer import HUB_NAME, aiperf_tokenizer, ensure_tokenizer
from orchestrator.config import WorkloadConfig

pytestmark = pytest.mark.inprocess  # a Python child importing AIPerf's tokenizer module; no AIPerf run, no server

_ASK_AIPERF = """
import json, sys
from aiperf.common.tokenizer import Tokenizer, _is_hf_cached
from aiperf.common.tokenizer_validator import _partition_preload_names
name = sys.argv[1]
tiktoken, to_warm, cached = _partition_preload_names({"m": name}, "main", None)
tok = Tokenizer.from_pretrained(name)
print(json.dumps({"cached": _is_hf_cached(name, "main"), "to_warm": sorted(to_warm), "already": sorted(cached),
                  "tokens": len(tok.encode("a b c")), "loaded_from": str(tok._tokenizer.name_or_path)}))
"""


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_aiperf_takes_the_entry_by_name_offline_without_a_prefetch(tmp_path: Path) -> None:
    """The built entry is given to AIPerf by name with HF_HUB_CACHE and HF_HUB_OFFLINE; in that environment AIPerf
    finds it in its cache (nothing to prefetch) and its offline loader loads it from the snapshot."""
    hub = tmp_path / "hub"
    snapshot = ensure_tokenizer(cache_dir=hub)
    assert snapshot.parent.parent == hub / "models--aqbench--wordlevel-v1"
    assert (snapshot.parent.parent / "refs" / "main").read_text() == snapshot.name  # no newline: read whole
    assert ensure_tokenizer(cache_dir=hub) == snapshot  # built once
    cmd = build_command(WorkloadConfig(), base_url="http://h", model="m", input_file=tmp_path / "i",
                        artifact_dir=tmp_path / "a", tokenizer=snapshot)
    assert _flag(cmd.argv, "--tokenizer") == HUB_NAME
    assert cmd.env["HF_HUB_CACHE"] == str(hub.resolve()) and cmd.env["HF_HUB_OFFLINE"] == "1"
    assert f"HF_HUB_CACHE={hub.resolve()}" in cmd.shell and "HF_HUB_OFFLINE=1" in cmd.shell
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))} | cmd.env
    out = subprocess.run([sys.executable, "-c", _ASK_AIPERF, HUB_NAME], env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["cached"] and got["to_warm"] == [] and got["already"] == [HUB_NAME]
    assert got["tokens"] == 5 and got["loaded_from"] == str(snapshot)  # character-level: "a b c" is 5 tokens
    # AIPerf's offline stub (config.json, written into a tokenizer-only snapshot) is already there: it writes nothing.
    assert (snapshot / "config.json").read_text() == "{}"


def test_a_plain_folder_or_an_incomplete_entry_is_given_by_path(tmp_path: Path) -> None:
    """A configured tokenizer folder keeps its path and no hub environment; so does a snapshot whose refs/main
    does not name it (an entry still being built)."""
    folder = tmp_path / "tok"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_text("{}")
    assert aiperf_tokenizer(folder) == (str(folder), {})
    snap = tmp_path / "hub" / "models--org--tok" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (snap / name).write_text("{}")
    assert aiperf_tokenizer(snap) == (str(snap), {})  # no refs/main yet
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("0" * 40)
    assert aiperf_tokenizer(snap) == ("org/tok", {"HF_HUB_CACHE": str((tmp_path / "hub").resolve()),
                                                  "HF_HUB_OFFLINE": "1"})
