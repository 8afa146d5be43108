"""`aqbench publish` over a real qualify journal (tests/data/journals/qualify-v2) with a corpus of planted
secrets in the free text of every event type: nothing planted is published, and with the scrubber bypassed
the independent final scan finds each one by file, line and kind, and refuses to write anything."""

from __future__ import annotations

import argparse
import copy
import getpass
import gzip
import ipaddress
import json
import re
import socket
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest

from orchestrator.commands import publish as publish_command
from orchestrator.ledger import read_run
from orchestrator.publish.detect import Detectors, MachineFacts
from orchestrator.publish.private import PrivateFacts, Scrubber
from orchestrator.publish.write import gather_facts, render_publication, write_publication
from orchestrator.reports import build_report
from orchestrator.spine.journal import read_journal
from orchestrator.spine.journal_upgrade import upgrader

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "journals" / "qualify-v2" / "events.jsonl.gz"
ENV_SECRET = "plantedEnvSecret-5e7a-value"
FQDN = "gpu-node-7.site.example"


def _own_address() -> str:
    """One of this machine's interface addresses that no private-range rule covers (IPv6 or public IPv4), or
    "" when it has none: only its being this machine's makes it private."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            ip = ipaddress.ip_address(a.address.split("%")[0])
            if not (ip.is_loopback or ip.is_link_local) and (ip.version == 6 or not ip.is_private):
                return str(ip)
    return ""


OWN_ADDRESS = _own_address()

# (what the detector calls it, the text planted, the part that must never be published)
CORPUS: list[tuple[str, str, str]] = [
    ("Hugging Face token", "hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z", "hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"),
    ("OpenAI-style key", "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA_x1", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA"),
    ("OpenAI-style key", "sk-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("GitHub token", "ghp_R8sT9uV0wX1yZ2aB3cD4eF5gH6iJ7kL8mN9o", "R8sT9uV0wX1yZ2aB3cD4eF5gH6iJ7kL8mN9o"),
    ("GitHub token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstu", "11ABCDEFG0123456789_abcdefghijklmnopqrstu"),
    ("NVIDIA API key", "nvapi-Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"),
    ("AWS access key id", "key id AKIAIOSFODNN7EXAMPLF here", "AKIAIOSFODNN7EXAMPLF"),
    ("credential setting", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4"),
    ("private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9xPLANTED\n-----END RSA PRIVATE KEY-----",
     "MIIEowIBAAKCAQEA7bq9xPLANTED"),
    ("bearer or basic credential", "Authorization: Bearer tok3nBearerValue9876543210", "tok3nBearerValue9876543210"),
    ("bearer or basic credential", "sent with Bearer zq8Xm2Lp9Rt4Vw7Yb1Nc5Kd3 attached", "zq8Xm2Lp9Rt4Vw7Yb1Nc5Kd3"),
    ("URL with credentials", "postgres://dbadmin:Pa55w0rdSecret@db.example:5432/qa", "Pa55w0rdSecret"),
    ("email address", "mail alice.smith@example.com now", "alice.smith@example.com"),
    ("email address", "page ops+alerts@corp.example.org", "ops+alerts@corp.example.org"),
    ("host name", f"on {socket.gethostname()} tonight", f"\\b{re.escape(socket.gethostname())}\\b"),
    ("host name", f"node {FQDN} answered", FQDN),
    ("host name", "short gpu-node-7 only", r"\bgpu-node-7\b"),
    ("user name", f"by {getpass.getuser()} today", f"(?<![\\w-]){re.escape(getpass.getuser())}(?![\\w-])"),
    ("home path", "cache at /home/alice/.cache/hf/model", "/home/alice"),
    ("home path", "key at /root/.ssh/id_rsa", "/root/.ssh"),
    ("temporary path", "clip /tmp/aq-scratch-91/clip.wav", "/tmp/aq-scratch-91"),
    ("scratch path", "bundle /scratch/team/qa/bundle.engine", "/scratch/team"),
    ("credential setting", "ran with --api-key Zp4Kq8Wm2Xr6Tn", "Zp4Kq8Wm2Xr6Tn"),
    ("credential setting", "HF_TOKEN=hfplain123456", "hfplain123456"),
    ("URL with credentials", "DATABASE_URL=mysql://app:hunter2secret@10.1.2.3/db", "hunter2secret"),
    ("known secret value", f"env leaked {ENV_SECRET}", ENV_SECRET),
    ("credential setting", "password=correct-horse-battery", "correct-horse-battery"),
    ("credential setting", "x-api-key: 3f9Kp2Lx8Qz5Vm1Nw7Rt4Yb6", "3f9Kp2Lx8Qz5Vm1Nw7Rt4Yb6"),
    ("high-entropy token", "opaque Kq7Zp3Xw9Lm2Rt8Vn4Yb6Hc1Jd5Fg0S value", "Kq7Zp3Xw9Lm2Rt8Vn4Yb6Hc1Jd5Fg0S"),
    ("Slack token", "xoxb-123456789012-abcdefghijkl", "xoxb-123456789012"),
    ("IP address", "peer 10.20.30.40 replied", r"\b10\.20\.30\.40\b"),
    ("credential setting", "client_secret: 7hG2kP9qL4xW1zN8", "7hG2kP9qL4xW1zN8"),
    *([("IP address", f"this host answered from {OWN_ADDRESS} then", re.escape(OWN_ADDRESS))] if OWN_ADDRESS else []),
]
# Fields never planted: identity and tags that other events refer to.
_SKIP_KEYS = frozenset({"kind", "run_id", "source", "request_id", "window", "model", "phase", "item_id", "arm",
                        "conversation_id", "status", "outcome", "classification", "verdict", "state", "previous",
                        "check", "gate", "scope", "path", "route", "timing_scope", "streaming", "stream", "level",
                        "trigger", "cause", "via", "during", "signal", "command", "schema_version"})


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every string leaf of decoded JSON, free text first (longer strings are likelier prose)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if not (len(path) == 0 and k in _SKIP_KEYS):
                out += _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _leaves(v, (*path, i))
    elif isinstance(value, str):
        out.append(path)
    return out


def _set(doc: Any, path: tuple[Any, ...], value: str) -> None:
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


# The fixture is a schema-2 journal: a plant must still decode through the upgrade the reader applies.
_decode = upgrader(2, "qualify")


def _plant_one(doc: dict[str, Any], text: str) -> bool:
    """Append `text` to the longest string of `doc` that still decodes as its event type."""
    for leaf in sorted(_leaves(doc), key=lambda p: -len(str(_get(doc, p)))):
        before = _get(doc, leaf)
        _set(doc, leaf, f"{before} {text}".strip())
        try:
            _decode(json.dumps(doc).encode())
        except msgspec.ValidationError:
            _set(doc, leaf, before)
            continue
        return True
    return False


def plant(run_dir: Path) -> list[tuple[int, str, str]]:
    """Copy the fixture journal into `run_dir` with a secret of CORPUS planted into a string of one event of
    every type (the corpus cycled so every secret is planted); returns (line, kind, needle) per plant."""
    lines = gzip.decompress(FIXTURE.read_bytes()).decode().splitlines()
    docs = [json.loads(ln) for ln in lines]
    docs[0]["host"]["hostname"] = FQDN
    targets: list[int] = []
    seen: set[str] = set()
    for i, doc in enumerate(docs):
        # The first event of each type with a string field able to hold free text (not only tags).
        if doc["kind"] not in seen and _plant_one(copy.deepcopy(doc), "probe"):
            seen.add(doc["kind"])
            targets.append(i)
    # The free text the issue names, read into comment.md and rows.json: warnings, capability reasons,
    # AIPerf's exit reason, the model result; then per-request events again, then log lines until every
    # secret of the corpus is planted.
    for kind in ("warned", "capability_probed", "aiperf_exited", "model_result", "verdict_reached", "request_correlated"):
        targets += [i for i, d in enumerate(docs) if d["kind"] == kind][1:3]
    targets += [i for i, d in enumerate(docs) if d["kind"] == "log_line"]
    planted: list[tuple[int, str, str]] = []
    for index in targets:
        if len(planted) >= len(CORPUS) and index > targets[len(seen) - 1] and docs[index]["kind"] == "log_line":
            break
        kind, text, needle = CORPUS[len(planted) % len(CORPUS)]
        if _plant_one(docs[index], text):
            planted.append((index + 1, kind, needle))
    assert {k for _, k, _ in planted} == {k for k, _, _ in CORPUS}
    assert {docs[line - 1]["kind"] for line, _, _ in planted} == seen, "one plant in every event type with text"
    assert len(seen) >= 20
    (run_dir / "events.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return planted


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="aqbench")
    publish_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.fixture
def planted_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[tuple[int, str, str]]]:
    monkeypatch.setenv("AQBENCH_TEST_API_KEY", ENV_SECRET)
    run = tmp_path / "runs" / "qualify-20261202-042902-5655"
    run.mkdir(parents=True)
    return run, plant(run)


def _published(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*")) if p.is_file()}


class TestPlantedCorpus:
    def test_nothing_planted_is_published(self, tmp_path: Path, planted_run: tuple[Path, list[tuple[int, str, str]]],
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """publish exits 0 and no planted secret, name or path is in any file, the journal copy included."""
        run, planted = planted_run
        assert len(planted) >= 30
        code = main(["publish", str(run), "--out", str(tmp_path / "pub")])
        assert code == 0, capsys.readouterr().err
        files = _published(tmp_path / "pub")
        assert sorted(files) == ["commands.md", "comment.md", "rows.json", f"runs/{run.name}/events.jsonl"]
        for name, text in files.items():
            for _, kind, needle in planted:
                assert not re.search(needle if needle.startswith(("\\b", "(?<")) else re.escape(needle), text), \
                    f"{kind} planted as {needle!r} is in {name}"

    def test_the_journal_copy_is_still_a_journal(self, tmp_path: Path,
                                                 planted_run: tuple[Path, list[tuple[int, str, str]]]) -> None:
        """Every event of the run is in the copy, of the same type, and `aqbench report` folds it to the same rows."""
        run, _ = planted_run
        assert main(["publish", str(run), "--out", str(tmp_path / "pub")]) == 0
        copy = tmp_path / "pub" / "runs" / run.name / "events.jsonl"
        original, _ = read_journal(run / "events.jsonl")
        published, torn = read_journal(copy)
        assert torn is None and [type(e) for e in published] == [type(e) for e in original]
        before, after = build_report(run / "events.jsonl"), build_report(copy)
        assert [(r.model, r.status, r.failed_stage) for r in after.rows] == \
            [(r.model, r.status, r.failed_stage) for r in before.rows]

    def test_bypassed_scrubber_each_plant_found_and_nothing_written(
            self, tmp_path: Path, planted_run: tuple[Path, list[tuple[int, str, str]]]) -> None:
        """Written unscrubbed, the final scan finds every planted secret at its journal line with its kind,
        and the output folder is never created."""
        run, planted = planted_run
        runs = [read_run(run)]
        facts = gather_facts(runs)
        out = tmp_path / "raw"
        result = write_publication(render_publication(runs), out, facts, scrub=False)
        found = {(f.file, f.line, f.kind) for f in result.findings}
        journal = f"runs/{run.name}/events.jsonl"
        missed = [(line, kind) for line, kind, _ in planted if (journal, line, kind) not in found]
        assert missed == [], sorted(f for f in found if f[0] == journal and f[1] in {m[0] for m in missed})
        assert result.files == [] and not out.exists()
        assert list(tmp_path.glob(".raw.publishing-*")) == []

    def test_refusal_names_file_line_and_kind_never_the_secret(
            self, tmp_path: Path, planted_run: tuple[Path, list[tuple[int, str, str]]],
            monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
        """With the scrubber broken (it passes everything through), publish exits 1, lists file:line: kind,
        prints no planted value and writes nothing."""
        run, planted = planted_run
        monkeypatch.setattr(Scrubber, "text", lambda self, text: text)
        monkeypatch.setattr(Scrubber, "data", lambda self, value, key="": value)
        monkeypatch.setattr(Scrubber, "event", lambda self, event: event)
        assert main(["publish", str(run), "--out", str(tmp_path / "pub")]) == 1
        err = capsys.readouterr().err
        line = next(p[0] for p in planted if p[1] == "Hugging Face token")
        assert f"pub/runs/{run.name}/events.jsonl:{line}: Hugging Face token" in err
        assert "nothing was written" in err
        for _, kind, needle in planted:
            if kind.endswith("path"):  # a folder is shown to add to [publish] roots, unless it names someone
                assert needle not in err or not Detectors(MachineFacts(users=[getpass.getuser()])).line(needle, 1)
            elif not needle.startswith(("\\b", "(?<")):
                assert needle not in err
            else:
                assert not re.search(needle, err), kind
        assert not (tmp_path / "pub").exists()


class TestDetectorsAlone:
    def test_independent_of_the_scrubbers_facts(self) -> None:
        """With no facts at all, shapes, entropy, emails and home/scratch/temporary paths are still found."""
        detectors = Detectors(MachineFacts())
        for kind, text, _ in CORPUS:
            if kind in ("host name", "user name", "known secret value") or (OWN_ADDRESS and OWN_ADDRESS in text):
                continue
            assert kind in {d.kind for d in detectors.line(text.replace("\n", " "), 1)}, text

    def test_what_aqbench_writes_is_not_flagged(self) -> None:
        """Digests, uuids, request ids, placeholders, routes and token counts are not secrets."""
        detectors = Detectors(MachineFacts(hosts=["gpu-node-7"], users=["alice"]))
        clean = ['"sha256": "9b8460968f4d89797f934324b04b4e68468aa839f83d578f5d7864182a81dc95"',
                 "x-request-id 3f1c2a4e-9b7d-4c1e-8f2a-0d6b5e4c3a21 aqb-reference-audioqa-capability-00001",
                 "HF_TOKEN=<redacted> --api-key <redacted> Authorization: Bearer <redacted> <home>/.cache <tmp>/x",
                 "POST /v1/chat/completions on 127.0.0.1:<port>; max_tokens=256 completion_tokens: 12345678",
                 "--tokenizer <venv>/tok completion_token_source: usage_reported aiperf 0.13.0"]
        for text in clean:
            assert detectors.line(text, 1) == [], text

    def test_scrubbed_planted_text_scans_clean(self) -> None:
        """What the scrubber makes of each planted text, the detectors accept."""
        facts = PrivateFacts(hosts=[socket.gethostname(), FQDN, "gpu-node-7"], users=[getpass.getuser()],
                             tmp=["/tmp"], roots={"home": ["/home/alice", "/root"], "scratch": ["/scratch/team"]},
                             secret_values=[ENV_SECRET], addresses=[OWN_ADDRESS] if OWN_ADDRESS else [])
        detectors = Detectors(MachineFacts(hosts=facts.hosts, users=facts.users, addresses=facts.addresses),
                              [ENV_SECRET])
        scrubber = Scrubber(facts)
        for _, text, _ in CORPUS:
            assert detectors.text(scrubber.text(text)) == [], (text, scrubber.text(text))
