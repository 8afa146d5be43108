"""docs/qualify.md's trtmc-server example is a configuration aqbench accepts, rendering to the argv shown."""

from __future__ import annotations

import re
from pathlib import Path

from adapters.trtmc.server_kind import TrtmcServerKind
from orchestrator.config import load_config

PAGE = Path(__file__).resolve().parents[2] / "docs" / "qualify.md"


def test_trtmc_server_example_loads_and_renders(tmp_path: Path) -> None:
    """The page's bench.toml for a real trtmc-server loads, and renders the limits a large bundle needs."""
    text = PAGE.read_text()
    section = text[text.index("## Qualifying a real trtmc-server"):]
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block, "docs/qualify.md lost its trtmc-server bench.toml example"
    path = tmp_path / "bench.toml"
    path.write_text(block.group(1))
    cfg = load_config(path)
    assert cfg.server.kind == "trtmc-server" and cfg.models[0].native_task == "audio_text_to_text"
    argv = TrtmcServerKind().render_argv(cfg.server.argv, {
        "bundle": cfg.server.bundle, "model": cfg.models[0].name, "host": cfg.server.host, "port": "8000",
        "records": "/tmp/r.jsonl", "replicas": str(cfg.server.replicas)})
    # trtmc-server's own limits that a large bundle and base64 clips need raised.
    assert argv[argv.index("--startup-timeout") + 1] == "900"
    assert int(argv[argv.index("--max-body-bytes") + 1]) >= 16 * 2**20
    assert cfg.server.startup_timeout_s >= 900
