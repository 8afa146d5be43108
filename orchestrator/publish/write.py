"""`aqbench publish`'s steps: gather what is private, render the publication (with a scrubbed copy of each
run's journal), scrub it, write it into a staging folder, scan what was written with the independent
detectors, and move it into place only when the scan is clean. Blocks (file writes and reads)."""

from __future__ import annotations

import getpass
import os
import pwd
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import msgspec
import psutil

from orchestrator.config import PUBLISH_ALLOWED_ENV, PublishConfig
from orchestrator.events import SCHEMA_VERSION, RunStarted
from orchestrator.ledger import InventoryView, Ledger, RunEvidence, ledger_markdown
from orchestrator.publish.comment import commands_markdown, comment_markdown, rows_json
from orchestrator.publish.current import KeyCheck, check_keys
from orchestrator.publish.detect import Detectors, machine_facts
from orchestrator.publish.private import PrivateFacts, Scrubber
from orchestrator.publish.scan import Finding, scan_files
from orchestrator.spine.journal import iter_journal
from orchestrator.spine.redaction import secret_values

__all__ = ["JournalCopy", "Publication", "gather_facts", "render_publication", "write_publication"]

_CHECKOUT = Path(__file__).resolve().parents[2]
_encoder = msgspec.json.Encoder(order="deterministic")
_line_encoder = msgspec.json.Encoder()


class Publication(msgspec.Struct, frozen=True, kw_only=True):
    """What was written (paths) and what the final scan found (empty = safe to post). With findings
    nothing was written: `files` is empty and the output folder is as it was."""

    files: list[str]
    findings: list[Finding]


class JournalCopy(msgspec.Struct, frozen=True, kw_only=True):
    """A run's journal to publish: every event, of every type, scrubbed line by line."""

    source: str


def _both(path: str | Path) -> list[str]:
    """A folder as given and resolved (symlinks), so either spelling is replaced."""
    p = Path(path).expanduser()
    return sorted({str(p), str(p.resolve())} - {"", "/"})


def _venv_of(executable: str) -> str:
    p = Path(executable)
    return str(p.parent.parent) if p.is_absolute() and p.parent.name in ("bin", "Scripts") else ""


def _own_addresses() -> list[str]:
    """This machine's interface addresses, loopback aside (read here, apart from the final scan's own list)."""
    found = {a.address.split("%", 1)[0] for addrs in psutil.net_if_addrs().values() for a in addrs
             if a.family in (socket.AF_INET, socket.AF_INET6)}
    return sorted(a for a in found if not a.startswith("127.") and a not in ("::1", "::", "0.0.0.0"))


def gather_facts(runs: list[RunEvidence], config: PublishConfig | None = None,
                 inventory: InventoryView | None = None) -> PrivateFacts:
    """What is private here: this machine's names and folders, each run's own (run folder, venv,
    checkout, bundle, dataset, host name, configured secrets), the inventory's TRTMC checkout and folder,
    plus `[publish]`'s roots and names."""
    cfg = config or PublishConfig(allowed_env=list(PUBLISH_ALLOWED_ENV))
    roots: dict[str, set[str]] = {"venv": {*_both(sys.prefix)}, "checkout": {*_both(_CHECKOUT)},
                                  "home": {*_both(Path.home())}}
    hosts = {socket.gethostname(), socket.getfqdn()}
    # Every login account of this machine, not only the one running: a journal may name a colleague's home.
    users = {getpass.getuser(), os.environ.get("USER", ""), os.environ.get("LOGNAME", ""), Path.home().name,
             *(p.pw_name for p in pwd.getpwall() if p.pw_uid >= 1000 and p.pw_name != "nobody"
               and not p.pw_shell.endswith(("nologin", "false")))}
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
        if run.config is not None and run.config.run.clip_cache:  # the default sits beside the run's folder
            roots.setdefault("clip-cache", set()).update(_both(run.config.run.clip_cache))
        env = run.config.server.env if run.config is not None else {}
        secrets.update(secret_values({str(k): v for k, v in env.items() if isinstance(v, str)}))
    if inventory is not None:
        if inventory.source.root:
            roots.setdefault("trtmc", set()).update(_both(inventory.source.root))
        if inventory.path:
            roots.setdefault("inventory-dir", set()).update(_both(Path(inventory.path).parent))
    for name, path in cfg.roots.items():
        roots.setdefault(name, set()).update(_both(path))
    # A full name (gpu-7.site.example) also appears short (gpu-7) in logs and prompts.
    hosts |= {h.split(".", 1)[0] for h in hosts if h and not h[0].isdigit()}
    tmp = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", os.environ.get("TMPDIR", "")}
    return PrivateFacts(
        roots={k: sorted(v) for k, v in sorted(roots.items()) if v},
        tmp=sorted({p for t in tmp if t for p in _both(t)}),
        hosts=sorted(h for h in hosts if h and h not in ("localhost", "localhost.localdomain")),
        users=sorted(u for u in users if len(u) >= 2),
        names=sorted(cfg.names), addresses=_own_addresses(), secret_values=sorted(secrets),
        allowed_env=list(cfg.allowed_env),
    )


def render_publication(runs: list[RunEvidence], ledger: Ledger | None = None, *, journals: bool = True,
                       keys: KeyCheck | None = None) -> dict[str, object]:
    """File name -> content before scrubbing: text for `.md`, plain data for `.json`, and with `journals`
    a JournalCopy per run (`runs/<run_id>/events.jsonl`, from which `aqbench report` rebuilds its reports).
    Rows under another run key than the current one (`keys`; default: the newest keyed row of each model)
    are marked stale in the comment and rows.json."""
    keys = keys or check_keys(runs)
    out: dict[str, object] = {
        "comment.md": comment_markdown(runs, keys, ledger),
        "rows.json": rows_json(runs, keys),
        "commands.md": commands_markdown(runs),
    }
    if ledger is not None:
        out["ledger.md"] = ledger_markdown(ledger)
        out["ledger.json"] = msgspec.to_builtins(ledger)
    if journals:
        for run in runs:
            out[f"runs/{run.run_id}/events.jsonl"] = JournalCopy(source=run.journal)
    return out


def _journal_bytes(copy: JournalCopy, scrubber: Scrubber) -> bytes:
    buf = bytearray()
    for event in iter_journal(copy.source):
        if isinstance(event, RunStarted):
            # Read through the upgrades, every event is written in this schema: the copy says so.
            event = msgspec.structs.replace(event, schema_version=SCHEMA_VERSION)
        buf += _line_encoder.encode(scrubber.event(event))
        buf += b"\n"
    return bytes(buf)


def _staging(out: Path) -> Path:
    staging = out.parent / f".{out.name}.publishing-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def write_publication(content: dict[str, object], out_dir: str | Path, facts: PrivateFacts, *,
                      scrub: bool = True, detectors: Detectors | None = None) -> Publication:
    """Write `content` (scrubbed unless `scrub` is False, which only tests of the scan want) into a staging
    folder beside `out_dir`, scan every file with `detectors` (default: this machine's, knowing the facts'
    secret values) and the facts, then move the files into `out_dir` only when nothing was found. With
    findings nothing reaches `out_dir` and the staging folder is removed. Blocks (file writes and reads)."""
    out = Path(out_dir)
    scrubber = Scrubber(facts)
    detectors = detectors or Detectors(machine_facts(facts.hosts, facts.users), facts.secret_values)
    staging = _staging(out)
    try:
        written: list[Path] = []
        for name, value in content.items():
            if isinstance(value, JournalCopy):
                data = _journal_bytes(value, scrubber) if scrub else Path(value.source).read_bytes()
            elif isinstance(value, str):
                data = (scrubber.text(value) if scrub else value).encode()
            else:
                data = msgspec.json.format(_encoder.encode(scrubber.data(value) if scrub else value), indent=2) + b"\n"
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
        findings = scan_files(written, facts, detectors, relative_to=staging)
        if findings:
            return Publication(files=[], findings=findings)
        placed = []
        for path in written:
            target = out / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            placed.append(str(target))
        return Publication(files=placed, findings=[])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
