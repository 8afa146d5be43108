"""`aqbench publish`'s steps: gather what is private about these runs and this machine, render the
publication, scrub it, write it, and scan what was written. Blocks (file writes and reads).
"""

from __future__ import annotations

import getpass
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.config import PUBLISH_ALLOWED_ENV, PublishConfig
from orchestrator.ledger import InventoryView, Ledger, RunEvidence, ledger_markdown
from orchestrator.publish.comment import commands_markdown, comment_markdown, rows_json
from orchestrator.publish.private import PrivateFacts, Scrubber
from orchestrator.publish.scan import Finding, scan_files
from orchestrator.redaction import secret_values

__all__ = ["Publication", "gather_facts", "render_publication", "write_publication"]

_CHECKOUT = Path(__file__).resolve().parents[2]
_encoder = msgspec.json.Encoder(order="deterministic")


class Publication(msgspec.Struct, frozen=True, kw_only=True):
    """What was written (paths) and what the final scan found in it (empty = safe to post)."""

    files: list[str]
    findings: list[Finding]


def _both(path: str | Path) -> list[str]:
    """A folder as given and resolved (symlinks), so either spelling is replaced."""
    p = Path(path).expanduser()
    return sorted({str(p), str(p.resolve())} - {"", "/"})


def _venv_of(executable: str) -> str:
    p = Path(executable)
    return str(p.parent.parent) if p.is_absolute() and p.parent.name in ("bin", "Scripts") else ""


def gather_facts(runs: list[RunEvidence], config: PublishConfig | None = None,
                 inventory: InventoryView | None = None) -> PrivateFacts:
    """What is private here: this machine's names and folders, each run's own (run folder, venv,
    checkout, bundle, dataset, host name, configured secrets), the inventory's TRTMC checkout and folder,
    plus `[publish]`'s roots and names."""
    cfg = config or PublishConfig(allowed_env=list(PUBLISH_ALLOWED_ENV))
    roots: dict[str, set[str]] = {"venv": {*_both(sys.prefix)}, "checkout": {*_both(_CHECKOUT)},
                                  "home": {*_both(Path.home())}}
    hosts = {socket.gethostname(), socket.getfqdn()}
    users = {getpass.getuser(), os.environ.get("USER", ""), os.environ.get("LOGNAME", ""), Path.home().name}
    secrets = set(secret_values(os.environ))
    for run in runs:
        prov = run.report.provenance
        roots.setdefault("run-dir", set()).update(_both(run.run_dir))
        if prov.argv and prov.argv[0].endswith("orchestrator/__main__.py"):
            roots["checkout"].update(_both(Path(prov.argv[0]).parent.parent))
        if prov.config_path:
            roots.setdefault("config-dir", set()).update(_both(Path(prov.config_path).parent))
        if prov.dataset and prov.dataset.path:
            roots.setdefault("dataset", set()).update(_both(prov.dataset.path))
        hosts.add(prov.hostname)
        bundles = ([run.config.server.bundle] + [m.bundle for m in run.config.models]) if run.config is not None else []
        roots.setdefault("bundle-dir", set()).update(
            p for b in bundles if isinstance(b, str) and b for p in _both(Path(b).parent))
        for row in run.report.rows:
            argv = row.server.argv
            if argv and (venv := _venv_of(argv[0])):
                roots["venv"].update(_both(venv))
        env = run.config.server.env if run.config is not None else {}
        secrets.update(secret_values({str(k): v for k, v in env.items() if isinstance(v, str)}))
    if inventory is not None:
        if inventory.source.root:
            roots.setdefault("trtmc", set()).update(_both(inventory.source.root))
        if inventory.path:
            roots.setdefault("inventory-dir", set()).update(_both(Path(inventory.path).parent))
    for name, path in cfg.roots.items():
        roots.setdefault(name, set()).update(_both(path))
    tmp = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", os.environ.get("TMPDIR", "")}
    return PrivateFacts(
        roots={k: sorted(v) for k, v in sorted(roots.items()) if v},
        tmp=sorted({p for t in tmp if t for p in _both(t)}),
        hosts=sorted(h for h in hosts if h and h not in ("localhost", "localhost.localdomain")),
        users=sorted(u for u in users if len(u) >= 2),
        names=sorted(cfg.names), secret_values=sorted(secrets),
        allowed_env=list(cfg.allowed_env),
    )


def render_publication(runs: list[RunEvidence], ledger: Ledger | None = None) -> dict[str, Any]:
    """File name -> content before scrubbing: text for `.md`, plain data for `.json`."""
    out: dict[str, Any] = {
        "comment.md": comment_markdown(runs, ledger),
        "rows.json": rows_json(runs),
        "commands.md": commands_markdown(runs),
    }
    if ledger is not None:
        out["ledger.md"] = ledger_markdown(ledger)
        out["ledger.json"] = msgspec.to_builtins(ledger)
    return out


def write_publication(content: dict[str, Any], out_dir: str | Path, facts: PrivateFacts, *,
                      scrub: bool = True) -> Publication:
    """Write `content` into `out_dir` (scrubbed unless `scrub` is False, which only tests of the scan
    want), then scan every file written. Blocks (file writes and reads)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scrubber = Scrubber(facts)
    written: list[Path] = []
    for name, value in content.items():
        if isinstance(value, str):
            data = (scrubber.text(value) if scrub else value).encode()
        else:
            data = msgspec.json.format(_encoder.encode(scrubber.data(value) if scrub else value), indent=2) + b"\n"
        path = out / name
        path.write_bytes(data)
        written.append(path)
    return Publication(files=[str(p) for p in written], findings=scan_files(written, facts, relative_to=out))
