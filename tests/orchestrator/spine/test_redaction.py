"""Credential redaction: the Redactor's rules, and planted secrets that never reach events.jsonl,
aqbench.log or the reports of a run."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import structlog

from orchestrator.config import config_from_dict
from orchestrator.events import (
    AiperfStarted,
    LogLine,
    ModelResult,
    PhaseStarted,
    ResultRow,
    RunStarted,
    ServerSpawned,
)
from orchestrator.reports import build_report, write_reports
from orchestrator.run import open_run
from orchestrator.spine.journal import encode_event, read_journal
from orchestrator.spine.logs import configure_logging, detach_run_log, get_logger
from orchestrator.spine.redaction import REDACTED, Redactor, is_secret_name

ENV_SECRET = "planted-env-secret-4f1c"
CONFIG_SECRET = "hf_plantedConfigSecret77"
FLAG_SECRET = "sk-planted-flag-secret-19"
BEARER = "plantedBearerToken0099"


class TestRedactor:
    def test_secret_names_by_part_not_substring(self) -> None:
        """TOKEN/KEY/SECRET/PASSWORD parts make a name secret; tokenizer and max_tokens stay public."""
        assert all(map(is_secret_name, ["HF_TOKEN", "--api-key", "apiKey", "DB_PASSWORD", "aws.secret",
                                        "Authorization"]))
        assert not any(map(is_secret_name, ["tokenizer", "max_tokens", "--tokenizer", "keyboard", "monkey"]))

    def test_text_assignments_headers_and_known_values(self) -> None:
        """Shell assignments, Authorization headers, bearer tokens and known values are redacted; the rest stays."""
        r = Redactor([ENV_SECRET])
        assert r.text(f"HF_TOKEN={FLAG_SECRET} TMPDIR=/tmp/x aiperf") == f"HF_TOKEN={REDACTED} TMPDIR=/tmp/x aiperf"
        assert r.text(f"-H 'Authorization: Bearer {BEARER}'") == f"-H 'Authorization: Bearer {REDACTED}'"
        assert r.text(f'{{"api_key": "{FLAG_SECRET}", "tokenizer": "/t"}}') == \
            f'{{"api_key": "{REDACTED}", "tokenizer": "/t"}}'
        assert r.text(f"worker saw {ENV_SECRET} at start") == f"worker saw {REDACTED} at start"
        assert r.text(f"aiperf --api-key {FLAG_SECRET} --tokenizer tok") == \
            f"aiperf --api-key {REDACTED} --tokenizer tok"
        assert r.text("max_tokens: 8 --request-count 4") == "max_tokens: 8 --request-count 4"

    def test_argv_and_nested_data(self) -> None:
        """The value after a secret flag is redacted in argv; secret-named keys are redacted in mappings."""
        r = Redactor()
        assert r.argv(["srv", "--api-key", FLAG_SECRET, "--port", "9", f"--token={BEARER}"]) == \
            ["srv", "--api-key", REDACTED, "--port", "9", f"--token={REDACTED}"]
        data = {"server": {"env": {"HF_TOKEN": CONFIG_SECRET, "OMP_NUM_THREADS": "2"}}, "n": 1}
        assert r.data(data) == {"server": {"env": {"HF_TOKEN": REDACTED, "OMP_NUM_THREADS": "2"}}, "n": 1}
        clean = {"a": ["x", "y"], "b": "plain"}
        assert r.data(clean) is clean


@pytest.fixture
def restore_structlog():
    yield
    detach_run_log()
    structlog.reset_defaults()


@pytest.mark.anyio
async def test_planted_secrets_never_reach_journal_log_or_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  restore_structlog: None) -> None:
    """A secret environment variable, a `[server] env` secret, a secret flag and an Authorization header,
    published and logged during a run, appear in none of events.jsonl, aqbench.log or report.*."""
    monkeypatch.setenv("AQBENCH_TEST_API_KEY", ENV_SECRET)
    configure_logging(fmt="json", level="warning")
    cfg = config_from_dict({
        "run": {"output_dir": str(tmp_path)},
        "server": {"env": {"HF_TOKEN": CONFIG_SECRET}},
        "models": [{"name": "m", "family": "f", "checkpoint": "c/m", "correctness": {"min_pass_rate": 1.0}}],
    }, where="test", base=tmp_path)
    argv = ["python", "-m", "srv", "--api-key", FLAG_SECRET, "--header", f"Authorization: Bearer {BEARER}"]
    with anyio.fail_after(20):
        async with open_run(cfg, command="test", argv=["aqbench", "test", "--token", FLAG_SECRET]) as run:
            await run.bus.publish(PhaseStarted(phase="model", model="m"))
            await run.bus.publish(ServerSpawned(incarnation=1, pid=1, argv=argv))
            await run.bus.publish(LogLine(stream="stdout", text=f"loaded {ENV_SECRET} and {CONFIG_SECRET}"))
            await run.bus.publish(AiperfStarted(window="m/aiperf", argv=["aiperf", "profile"], artifact_dir="a",
                                                shell=f"OPENAI_API_KEY={FLAG_SECRET} aiperf profile"))
            await run.bus.publish(ModelResult(model="m", status="failed", row=ResultRow(qualify_command=f"x --token {BEARER}")))
            get_logger("t").info("server_spawned", argv=argv, env={"HF_TOKEN": CONFIG_SECRET},
                                 note=f"key is {ENV_SECRET}")
            journal = run.journal_path
    write_reports(journal, journal.parent)
    for name in ("events.jsonl", "aqbench.log", "report.json", "report.md", "report.html"):
        text = (journal.parent / name).read_text()
        for secret in (ENV_SECRET, CONFIG_SECRET, FLAG_SECRET, BEARER):
            assert secret not in text, f"{secret} in {name}"
    events, _ = read_journal(journal)
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.config is not None and started.config.server.env == {"HF_TOKEN": REDACTED}
    spawned = next(e for e in events if isinstance(e, ServerSpawned))
    assert spawned.argv == ["python", "-m", "srv", "--api-key", REDACTED, "--header", f"Authorization: Bearer {REDACTED}"]
    assert build_report(journal).rows[0].server.argv == spawned.argv
    assert f'"note":"key is {REDACTED}"' in (journal.parent / "aqbench.log").read_text()


def test_reports_redact_a_journal_written_before_redaction(tmp_path: Path) -> None:
    """A journal that still holds a secret flag (written by an older aqbench) folds into rows without it."""
    events = [RunStarted(seq=1, run_id="old", command="qualify"), PhaseStarted(seq=2, phase="model", model="m"),
              ServerSpawned(seq=3, incarnation=1, pid=1, argv=["srv", "--api-key", FLAG_SECRET])]
    (tmp_path / "events.jsonl").write_bytes(b"".join(encode_event(e) + b"\n" for e in events))
    report = build_report(tmp_path / "events.jsonl")
    assert report.rows[0].server.argv == ["srv", "--api-key", REDACTED]
    assert FLAG_SECRET not in msgspec.json.encode(report).decode()


def test_ingest_journal_never_holds_a_logged_secret(tmp_path: Path) -> None:
    """`aqbench ingest --out` re-journals log lines: a secret header and assignment in a log are redacted."""
    import argparse

    from orchestrator.commands.ingest import register

    log = tmp_path / "server.log"
    log.write_text('{"event":"started","timestamp":"2024-05-01T12:00:00Z","level":"info",'
                   f'"headers":{{"Authorization":"Bearer {BEARER}"}},"api_key":"{FLAG_SECRET}"}}\n'
                   f"plain text line HF_TOKEN={CONFIG_SECRET}\n")
    parser = argparse.ArgumentParser(prog="aqbench")
    register(parser.add_subparsers())
    args = parser.parse_args(["ingest", str(log), "--out", str(tmp_path / "events.jsonl")])
    assert args.func(args) == 0
    text = (tmp_path / "events.jsonl").read_text()
    assert all(s not in text for s in (BEARER, FLAG_SECRET, CONFIG_SECRET)) and text.count(REDACTED) == 3


def test_no_field_of_the_journal_looks_like_a_secret() -> None:
    """The journal's redaction treats a field named for a token, key, secret or password as a credential:
    none of aqbench's own event or payload fields may be named so (a `gate_key` lost its value that way)."""
    import msgspec

    import orchestrator.events as events
    from orchestrator.spine.redaction import is_secret_name

    exported = (getattr(events, n) for n in events.__all__)
    classes = [c for c in exported if isinstance(c, type) and issubclass(c, msgspec.Struct)]
    named = sorted({f"{cls.__name__}.{f.name}" for cls in classes for f in msgspec.structs.fields(cls)
                    if is_secret_name(f.name)})
    assert named == []
