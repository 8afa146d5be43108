"""`aqbench qualify` end to end with real subprocesses: the reference server, scripted flawed servers,
a gate set too high, and a server killed during the AIPerf stage. Reports rebuilt from the journal."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.dataset.clip_cache import CLIP_MANIFEST, FACTS_FOLDER, ClipCache, read_manifest
from orchestrator.events import (
    AccountingChecked,
    AiperfStarted,
    AnswerIncomplete,
    CapabilityProbed,
    GateEvaluated,
    ModelResult,
    PhaseFinished,
    RequestCorrelated,
    ServerRecord,
    ServerSpawned,
    TransportEvidence,
    VerdictReached,
    Warned,
)
from orchestrator.spine.journal import read_journal

# What qualify decides from answers, records and accounting, none of it timing: runs beside the serial lane
# (tests/conftest.py, `beside`), on the unit tests' worker once they are done.
pytestmark = pytest.mark.beside

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "datasets" / "audioqa-v1"
V2 = ROOT / "datasets" / "audioqa-v2"
STUB = ROOT / "tests" / "data" / "servers" / "chat_stub.py"
DEFAULT = (ROOT / "bench.toml").read_text()

# Signal-only conditioning pairs (fast to answer) plus one spoken pair and one language item.
MINI_ITEMS = ["count-beeps-5", "count-beeps-3", "pitch-higher-up", "pitch-lower-up", "frequency-1k",
              "duration-0s8", "content-meeting-day", "content-meeting-hour"]


def _disk_bytes(folder: Path) -> int:
    """What `du` counts for `folder`: the blocks of every file under it."""
    return sum(os.lstat(os.path.join(root, f)).st_blocks * 512 for root, _, files in os.walk(folder) for f in files)


def mini_dataset(tmp_path: Path, items: list[str], source: Path = DATASET) -> Path:
    """A real dataset folder holding a subset of a shipped set (same files, same hashes)."""
    out = tmp_path / "mini"
    lines = [ln for ln in (source / "manifest.jsonl").read_text().splitlines()
             if json.loads(ln)["id"] in items]
    assert len(lines) == len(items)
    for ln in lines:
        rel = json.loads(ln)["audio"]
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, out / rel)
    (out / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    return out


def half_of_v2(tmp_path: Path) -> Path:
    """Every other clip of audioqa-v2 with all its questions (so each kind keeps about half its items, and
    a clip asked two ways stays a same-clip pair): about 200 audio problems, enough for the default 2-point
    margin (a model agreeing with its reference passes from 172)."""
    lines = [json.loads(ln) for ln in (V2 / "manifest.jsonl").read_text().splitlines()]
    clips = list(dict.fromkeys(x["audio"] for x in lines))[::2]
    return mini_dataset(tmp_path, [x["id"] for x in lines if x["audio"] in clips], source=V2)


def config(tmp_path: Path, *, server_argv: str | None = None, kind: str = "reference", dataset: Path | None = None,
           extra_models: str = "", replace: dict[str, str] | None = None, reference: bool | None = None) -> Path:
    """bench.toml for a test. A mini dataset cannot decide non-inferiority (tens of paired problems where the
    default margin needs 67 or more), so with one the reference side and its gate are left out unless
    `reference` asks for them."""
    text = DEFAULT.replace('output_dir = "runs"', f'output_dir = "{tmp_path / "runs"}"')
    if not (reference if reference is not None else dataset is None):
        start = text.index("# Correctness as the owners judge it")
        text = text[:start] + text[text.index("\n[dataset]", start) + 1:]
    if server_argv is not None:
        start = text.index("argv = [")
        end = text.index("]", start) + 1
        text = text[:start] + f"argv = {server_argv}" + text[end:]
        text = text.replace('kind = "reference"', f'kind = "{kind}"')
    if dataset is not None:
        text = text.replace('name = "audioqa-v2"', f'name = "audioqa-v2"\npath = "{dataset}"')
        text = text.replace("[models.correctness.min_pass_rate_by_kind]\ncount = 1.0\n", "")
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    text = text.replace("[dataset]", extra_models + "\n[dataset]", 1)
    path = tmp_path / "bench.toml"
    path.write_text(text)
    return path


def qualify(cfg: Path, *args: str, timeout: int = 400) -> tuple[int, str, Path]:
    out = subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", "qualify",
                          "--config", str(cfg), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    runs = sorted((cfg.parent / "runs").iterdir())
    return out.returncode, out.stderr, runs[-1]


def results(run_dir: Path) -> dict[str, ModelResult]:
    events, torn = read_journal(run_dir / "events.jsonl")
    assert torn is None
    return {e.model: e for e in events if isinstance(e, ModelResult)}


def stub_argv(mode: str) -> str:
    return json.dumps(["{python}", str(STUB), "--mode", mode, "--host", "{host}", "--port", "{port}",
                       "--model-name", "{model}", "--records", "{records}"])


WRONG = "reference-audioqa-wrong10"


def _wrong_model() -> str:
    """The default model again, its server answering a tenth of the items wrongly (a hash of each item's audio
    and question picks them), judged only against the reference, with no native path (the fault is HTTP's)."""
    block = DEFAULT[DEFAULT.index("[[models]]"):DEFAULT.index("\n[dataset]")]
    block = block.replace('name = "reference-audioqa"', f'name = "{WRONG}"')
    block = block.replace('native_argv = ["{python}", "-m", "adapters.reference", "worker"]\n', "")
    block = block.replace("min_pass_rate = 0.9\n", "").replace("[models.correctness.min_pass_rate_by_kind]\ncount = 1.0\n", "")
    return block.replace("[models.resources]", 'server_args = ["--fault-wrong-item-share", "0.10"]\n[models.resources]', 1)


@pytest.mark.aiperf
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_default_qualify_passes_and_a_tenth_wrong_fails_non_inferiority(tmp_path: Path) -> None:
    """The default configuration on half of audioqa-v2 (every other clip, about 200 audio problems): the
    reference server goes through every stage, its non-inferiority against its float32 self is `pass` at the
    owners' 2-point quantized margin over the audio arm, and `aqbench report` rebuilds a byte-identical
    report.json. Beside it, the same model with `--fault-wrong-item-share 0.10` FAILs against the same
    reference (asked once for both), so the run exits 1; each row says what its n could detect."""
    dataset = half_of_v2(tmp_path)
    cfg = config(tmp_path, dataset=dataset, reference=True, extra_models=_wrong_model())
    rc, stderr, run_dir = qualify(cfg, timeout=1100)
    assert rc == 1, stderr[-4000:]
    res = results(run_dir)
    clean, wrong = res["reference-audioqa"], res[WRONG]
    assert clean.status == "aiperf-qualified" and clean.failed_stage == "", clean.row.reason
    assert clean.row.aiperf_command.count("aiperf profile") == 1
    events, _ = read_journal(run_dir / "events.jsonl")
    acc = [e for e in events if isinstance(e, AccountingChecked) and e.window == "reference-audioqa/aiperf"]
    assert len(acc) == 1 and acc[0].balanced and acc[0].in_flight == 0
    started = [e for e in events if isinstance(e, AiperfStarted)]  # no-spin timing, the default
    assert started and all("AQBENCH_TIMING_WAIT=1" in e.shell for e in started)
    profiling = [e for e in events if isinstance(e, RequestCorrelated)
                 and e.window == "reference-audioqa/aiperf" and e.phase == "profiling"]
    assert len(profiling) == 48 and all(e.ok and e.answer for e in profiling)
    assert all(e.model_call_ms < e.request_latency_ms for e in profiling)
    # Dealt by kind, the 48 profiling requests ask every kind: no gate is left without answers under load.
    assert not [e for e in events if isinstance(e, Warned) and e.code == "gates_unreachable"]
    audio = [json.loads(ln) for ln in (dataset / "manifest.jsonl").read_text().splitlines()]
    ni = clean.row.noninferiority
    assert ni is not None and ni.outcome == "pass" and (ni.gate_used, ni.margin) == ("quantized_gate", 2.0), ni
    assert ni.arms == ["audio"] and ni.n + ni.reference_unanswered == len(audio) >= 172
    assert ni.upper is not None and ni.upper < 2.0 and (ni.candidate_precision, ni.reference_precision) == ("int8", "float32")
    assert ni.fail_from_b is not None and ni.detectable_regression is not None and ni.detectable_power_regression
    # The faulted model: a tenth of the items answered wrongly is a regression the decision detects.
    bad = wrong.row.noninferiority
    assert wrong.status == "failed" and wrong.failed_stage == "noninferiority", wrong.row.reason
    assert bad is not None and bad.outcome == "fail" and bad.lower is not None and bad.lower > 2.0
    assert bad.b is not None and bad.b >= bad.fail_from_b and bad.n == ni.n  # type: ignore[operator]
    assert wrong.row.reason.startswith("fail against the reference: R = ")
    # One reference server for both models: the second reuses the first one's answers, judged as its own.
    spawned = [e for e in events if isinstance(e, ServerSpawned)]
    assert sum("float32" in e.argv for e in spawned) == 1
    assert [("--fault-wrong-item-share" in e.argv, "float32" in e.argv) for e in spawned] == \
        [(False, False), (False, True), (True, False)]
    reference = {(e.model, e.item_id) for e in events if isinstance(e, VerdictReached) and e.path == "reference"}
    assert {m for m, _ in reference} == {"reference-audioqa", WRONG} and len(reference) == 2 * len(audio)
    first = (run_dir / "report.json").read_bytes()
    report = json.loads(first)
    assert "reference-audioqa" in json.dumps(report)
    # The folder holds evidence, not copies: AIPerf's inputs.json gave way to its note, the clips as sent are in
    # the cache beside runs/ (named by the folder's clips.jsonl), and the reports rebuild without that cache.
    assert _disk_bytes(run_dir) <= 20 * 10**6
    assert not list(run_dir.rglob("inputs.json")) and list(run_dir.rglob("inputs.json.removed"))
    cache = run_dir.parent.with_name("runs-clips").resolve()
    sent = read_manifest(run_dir / "wire" / CLIP_MANIFEST)
    assert {c.sha256 for c in sent if Path(c.path).parent == cache} == {p.stem for p in ClipCache(cache).entries()}
    assert {p.name for p in cache.iterdir() if p.is_dir()} == {FACTS_FOLDER}  # the facts kept for the next run
    cache.rename(tmp_path / "cache-aside")
    for name in ("report.json", "report.md", "report.html"):
        (run_dir / name).unlink()
    rebuilt = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(run_dir)], capture_output=True,
                             text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (run_dir / "report.json").read_bytes() == first
    md = (run_dir / "report.md").read_text()
    assert "aiperf-qualified" in md and "| outcome | pass |" in md and "| outcome | fail |" in md
    assert "| detectable regression |" in md and "Correctness via reference:" in md
    assert "vs silence over the " in md  # the silence arm ran on the conditioning subset
    assert (run_dir / "report.html").read_text().count("<svg") >= 3
    # The clean model's answers are whole on every path: none journaled as incomplete, every line complete.
    assert not [e for e in events if isinstance(e, AnswerIncomplete) and e.model == "reference-audioqa"]
    lines = {c["path"]: c for c in report["rows"][0]["completeness"]}
    assert list(lines) == ["capability", "http", "native", "aiperf"]
    assert all(c["checked"] > 0 and c["complete"] == c["checked"] and not c["defects"] for c in lines.values())
    assert lines["aiperf"]["checked"] == 48
    assert "| aiperf | 48 | 48 | complete |" in md


@pytest.fixture(scope="module")
def rejecting_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One qualify of two models on a server that 400s input_audio (as trtmc-server does), shared by the
    tests that read its journal: the audio-QA model and a transcription one."""
    tmp_path = tmp_path_factory.mktemp("rejecting")
    other = ('\n[[models]]\nname = "whisper-like"\nfamily = "whisper"\ncheckpoint = "openai/whisper-tiny"\n'
             'native_task = "speech_transcription"\n[models.correctness]\nmin_pass_rate = 0.9\n')
    cfg = config(tmp_path, server_argv=stub_argv("reject-audio"), kind="trtmc-server",
                 dataset=mini_dataset(tmp_path, MINI_ITEMS), extra_models=other)
    return qualify(cfg)


# The tests sharing a module fixture's run form one xdist group (tests/conftest.py): that run is made once.
@pytest.mark.xdist_group("qualify-rejecting")
def test_trtmc_like_server_rejecting_audio_is_blocked_or_unsupported(rejecting_run: tuple[int, str, Path]) -> None:
    """A server that 400s input_audio (as trtmc-server does) makes an audio_text_to_text checkpoint
    `blocked` and any other checkpoint `unsupported`, with the 400 body kept as evidence."""
    rc, stderr, run_dir = rejecting_run
    assert rc == 1, stderr[-3000:]
    res = results(run_dir)
    assert res["reference-audioqa"].status == "blocked"
    assert "no served route reaches it" in res["reference-audioqa"].row.reason
    assert res["whisper-like"].status == "unsupported"
    assert res["whisper-like"].row.reason.startswith("server rejects input_audio in chat")
    events, _ = read_journal(run_dir / "events.jsonl")
    transport = [e for e in events if isinstance(e, CapabilityProbed) and e.check == "transport"]
    assert len(transport) == 2 and not any(t.passed for t in transport)
    evidence = transport[0].evidence
    assert isinstance(evidence, TransportEvidence)  # typed since journal schema 3; the checks are unchanged
    assert '"code":"invalid_request"' in evidence.with_audio.body.replace(" ", "")
    assert evidence.without_audio.status == 200


@pytest.mark.xdist_group("qualify-rejecting")
def test_two_models_get_their_own_records_files_and_no_record_is_journaled_twice(
        rejecting_run: tuple[int, str, Path]) -> None:
    """Each model's server writes its own records file (per model and incarnation), so the second model's
    tailer never re-reads the first one's lines: every server record is journaled exactly once."""
    rc, stderr, run_dir = rejecting_run
    assert rc == 1, stderr[-3000:]
    events, _ = read_journal(run_dir / "events.jsonl")
    paths = [e.records_path for e in events if isinstance(e, ServerSpawned)]
    assert len(paths) == 2 and len(set(paths)) == 2, paths
    assert [Path(p).parent.name for p in paths] == ["reference-audioqa", "whisper-like"]
    records = [e.request_id for e in events if isinstance(e, ServerRecord)]
    assert records and len(records) == len(set(records)), sorted(records)
    written = sum(len(Path(p).read_text().splitlines()) for p in paths)
    assert len(records) == written


FLAWED = [("text-only", "text-only:"), ("transcribe", "transcription-only:")]


@pytest.fixture(scope="module")
def flawed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One qualify of two copies of the default model, each on a flawed server whose mode its name names
    (`flawed--text-only`, `flawed--transcribe`), shared by the cases below: one run instead of one per flaw."""
    tmp_path = tmp_path_factory.mktemp("flawed")
    cfg = config(tmp_path, server_argv=stub_argv("from-model"), dataset=mini_dataset(tmp_path, MINI_ITEMS))
    text = cfg.read_text()
    block = text[text.index("[[models]]"):text.index("\n[dataset]")]
    cfg.write_text(text.replace(block, "\n".join(block.replace('name = "reference-audioqa"', f'name = "flawed--{mode}"')
                                                 for mode, _ in FLAWED)))
    return qualify(cfg)


@pytest.mark.xdist_group("qualify-flawed")
@pytest.mark.parametrize(("mode", "reason"), FLAWED)
def test_flawed_servers_are_unsupported_with_reason(flawed_run: tuple[int, str, Path], mode: str, reason: str) -> None:
    """A server that ignores the audio, or one that only transcribes, ends `unsupported` at capability
    with the reason named."""
    rc, stderr, run_dir = flawed_run
    assert rc == 1, stderr[-3000:]
    res = results(run_dir)[f"flawed--{mode}"]
    assert res.status == "unsupported" and res.failed_stage == "capability"
    assert reason in res.row.reason, res.row.reason
    assert "answers do not follow the audio" in res.row.reason


@pytest.mark.slow
def test_gate_above_achievable_fails_at_correctness_listing_items(tmp_path: Path) -> None:
    """A gate of 100 % on a set including an item the reference cannot answer (French) fails at
    correctness, naming the failing item; the gate is applied as written."""
    cfg = config(tmp_path, dataset=mini_dataset(tmp_path, [*MINI_ITEMS, "language-fr"]),
                 replace={"min_pass_rate = 0.9": "min_pass_rate = 1.0",
                          # Audio arm only: the capability probe must prepare its silence arm itself.
                          'arms = ["audio", "silence", "transcript"]': 'arms = ["audio"]'})
    rc, stderr, run_dir = qualify(cfg)
    assert rc == 1, stderr[-3000:]
    res = results(run_dir)["reference-audioqa"]
    assert res.status == "failed" and res.failed_stage == "correctness"
    assert "language-fr" in res.row.reason and "below the required 1.0" in res.row.reason
    events, _ = read_journal(run_dir / "events.jsonl")
    end = [e for e in events if isinstance(e, PhaseFinished) and e.phase == "correctness"][0]
    assert end.detail.failing_items == ["language-fr"]


@pytest.mark.aiperf
@pytest.mark.slow
def test_server_killed_during_aiperf_fails_with_every_request_accounted(tmp_path: Path) -> None:
    """Killing the server mid-AIPerf ends the model `failed` at aiperf; accounting still balances and the
    requests caught by the crash carry cause server_crash."""
    argv = json.loads(DEFAULT[DEFAULT.index("argv = [") + 7: DEFAULT.index("]", DEFAULT.index("argv = [")) + 1]
                      .replace("\n", " "))
    cfg = config(tmp_path, server_argv=json.dumps([*argv, "--fault-latency-ms", "150"]),
                 dataset=mini_dataset(tmp_path, MINI_ITEMS),
                 replace={'policy = "on-failure"': 'policy = "never"', "requests = 48": "requests = 60",
                          'native_argv = ["{python}", "-m", "adapters.reference", "worker"]\n': ""})
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "--log-level", "warning", "qualify",
                             "--config", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    killed = False
    deadline = time.monotonic() + 400
    try:
        while not killed and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            runs = list((tmp_path / "runs").glob("*/events.jsonl"))
            if not runs:
                continue
            lines = runs[0].read_text().splitlines()
            profiling = sum('"kind":"request_correlated"' in ln and '"phase":"profiling"' in ln
                            and "/aiperf" in ln for ln in lines)
            if profiling >= 8:
                spawned = [json.loads(ln) for ln in lines if '"kind":"server_spawned"' in ln]
                os.kill(spawned[-1]["pid"], signal.SIGKILL)
                killed = True
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert killed, "the AIPerf stage never started"
    assert proc.returncode == 1, stderr[-3000:]
    run_dir = next((tmp_path / "runs").iterdir())
    res = results(run_dir)["reference-audioqa"]
    assert res.status == "failed" and res.failed_stage == "aiperf"
    events, _ = read_journal(run_dir / "events.jsonl")
    assert any(isinstance(e, ServerSpawned) for e in events)
    acc = [e for e in events if isinstance(e, AccountingChecked) and e.window == "reference-audioqa/aiperf"][0]
    assert acc.in_flight == 0 and not acc.duplicates, acc
    correlated = [e for e in events if isinstance(e, RequestCorrelated) and e.window == "reference-audioqa/aiperf"]
    issued = sum(sum(v.values()) if isinstance(v, dict) else v for v in acc.issued.values())
    assert issued == len(correlated), (acc.issued, len(correlated))
    causes = {e.cause for e in correlated if not e.ok}
    assert "server_crash" in causes, causes


DEFECT_STUB = ROOT / "tests" / "data" / "servers" / "defect_stub.py"
TARGET = "frequency of the tone"  # frequency-1k: not among the capability probe's items
COMPLETENESS_ITEMS = ["count-beeps-5", "count-beeps-3", "pitch-higher-up", "pitch-lower-up", "frequency-1k",
                      "content-meeting-day", "content-meeting-hour"]


def _defect_models(names: dict[str, str]) -> str:
    """[[models]] blocks; the value is a native defect (a native_argv on the defect stub) or ""."""
    out = []
    for name, native in names.items():
        block = f'\n[[models]]\nname = "{name}"\nfamily = "stub"\ncheckpoint = "stub/{name}"\n'
        if native:
            block += "native_argv = " + json.dumps(["{python}", str(DEFECT_STUB), "worker", "--defect", native,
                                                    "--target", TARGET, "--model-name", "{model}"]) + "\n"
        out.append(block + "[models.correctness]\nmin_pass_rate = 0.5\n")
    return "".join(out)


def _defect_config(tmp_path: Path, models: dict[str, str], *extra: str) -> Path:
    argv = json.dumps(["{python}", str(DEFECT_STUB), "--defect", "from-model", "--target", TARGET, *extra,
                       "--host", "{host}", "--port", "{port}", "--model-name", "{model}", "--records", "{records}"])
    return config(tmp_path, server_argv=argv, dataset=mini_dataset(tmp_path, COMPLETENESS_ITEMS),
                  extra_models=_defect_models(models),
                  replace={'arms = ["audio", "silence", "transcript"]': 'arms = ["audio"]',
                           "request_timeout_s = 60.0": "request_timeout_s = 60.0\nmax_tokens = 40"})


INCOMPLETE = [
    ("stub--empty", "", "http", "empty"),
    ("stub--truncate-finish", "", "http", "length_limit"),
    ("stub--truncate-count", "", "http", "length_limit"),
    ("stub--echo", "", "http", "echo"),
    ("stub--repeat", "", "http", "repetition"),
    ("native--clean", "truncate-count", "native", "length_limit"),
]


def _model_md(md: str, model: str) -> str:
    """The report.md sections headed by `model` (its details, its failure if any): another model's lines of
    the shared run cannot stand in for its own."""
    return "\n".join(s for s in md.split("\n### ") if s.split("\n", 1)[0] == model or s.startswith(f"{model}: "))


@pytest.fixture(scope="module")
def incomplete_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One qualify of every defect model (each on its own server, its defect named by its model name), shared
    by the tests that read its journal: one run instead of one per defect."""
    tmp_path = tmp_path_factory.mktemp("incomplete")
    cfg = _defect_config(tmp_path, {model: native for model, native, _, _ in INCOMPLETE})
    return qualify(cfg, *[a for model, *_ in INCOMPLETE for a in ("--model", model)], "--skip-aiperf",
                   timeout=560)


@pytest.mark.slow
@pytest.mark.xdist_group("qualify-incomplete")
@pytest.mark.parametrize(("model", "native", "path", "defect"), INCOMPLETE)
def test_incomplete_answers_are_named_journaled_reported_and_counted_wrong(
        incomplete_run: tuple[int, str, Path], model: str, native: str, path: str, defect: str) -> None:
    """A server (or native worker) whose answer to one question is empty, cut at the limit (told by
    finish_reason, or by the count where finish_reason is null), an echo of the question or a repetition:
    the defect is named and journaled with the request id, the verdict is `incomplete` (a wrong answer for
    every gate), the report lists the answer beside its verdict, and the one defect fails nothing on its own:
    the model, above its gate with that answer counted wrong, goes on (family-validated; a native answer cut
    where HTTP's is whole differs from it, which the identity stage fails)."""
    rc, stderr, run_dir = incomplete_run
    assert rc == 1, stderr[-3000:]  # --skip-aiperf: family-validated at best, not aiperf-qualified
    res = results(run_dir)[model]
    if path == "native":  # the cut native answer differs from the HTTP one: the identity stage says so
        assert res.status == "failed" and res.failed_stage == "identity", res.row.reason
    else:
        assert res.status == "family-validated" and res.failed_stage == "", res.row.reason
    events, _ = read_journal(run_dir / "events.jsonl")
    found = [e for e in events if isinstance(e, AnswerIncomplete) and e.model == model]
    assert [(e.path, e.item_id, e.defects[0]) for e in found] == [(path, "frequency-1k", defect)], found
    rid = found[0].request_id
    assert rid.startswith(f"aqb-{model}-")
    verdict = [e for e in events if isinstance(e, VerdictReached) and e.request_id == rid]
    assert [v.verdict for v in verdict] == ["incomplete"]
    # Every other answer, probes included, was whole.
    checked = [e for e in events if isinstance(e, PhaseFinished) and e.phase == "capability" and e.model == model][0]
    assert checked.detail.answers_checked >= 8
    end = [e for e in events if isinstance(e, PhaseFinished) and e.phase == "correctness" and e.model == model][0]
    assert end.outcome == "passed"
    assert "1 incomplete answers, counted wrong" in end.reason and f"frequency-1k|audio via {path}" in end.reason
    assert [(i.item_id, i.verdict, i.defects[0]) for i in end.detail.incomplete] == \
        [("frequency-1k", "incomplete", defect)]
    if path == "http":  # the gate counted it wrong: 6 of the 7 audio answers right
        gate = [e for e in events if isinstance(e, GateEvaluated) and e.scope == "arm:audio" and e.model == model][0]
        assert (gate.detail.correct, gate.detail.total) == (6, 7) and "frequency-1k" in gate.detail.failing_items
    md = _model_md((run_dir / "report.md").read_text(), model)
    assert f"| {path} | " in md and f"{defect} 1" in md and rid in md
    assert rid in (run_dir / "report.html").read_text()


@pytest.mark.aiperf
@pytest.mark.slow
def test_answers_cut_only_under_load_fail_the_aiperf_stage_as_a_changed_completeness(tmp_path: Path) -> None:
    """A server that answers whole in the correctness stage but, under AIPerf, cuts one question's answer
    at the request's limit with a null finish_reason (trtmc-server's way): the load path tells it from the
    server record's count against the max_tokens AIPerf sent, journals each one, reports the change from
    the correctness stage, and the model stops at aiperf."""
    model = "stub--truncate-count"
    cfg = _defect_config(tmp_path, {model: ""}, "--under-load-only")
    rc, stderr, run_dir = qualify(cfg, "--model", model, timeout=600)
    assert rc == 1, stderr[-3000:]
    res = results(run_dir)[model]
    assert res.status == "failed" and res.failed_stage == "aiperf", res.row.reason
    assert "changed completeness from the correctness stage" in res.row.reason
    events, _ = read_journal(run_dir / "events.jsonl")
    found = [e for e in events if isinstance(e, AnswerIncomplete)]
    assert found and {(e.path, e.item_id, tuple(e.defects)) for e in found} == {("aiperf", "frequency-1k", ("length_limit",))}
    assert all(e.completion_tokens == 40 and e.max_tokens == 40 and e.finish_reason is None for e in found)
    load = {e.request_id for e in events if isinstance(e, RequestCorrelated) and e.window == f"{model}/aiperf"
            and e.phase == "profiling" and e.item_id == "frequency-1k"}
    assert {e.request_id for e in found} == load
    end = [e for e in events if isinstance(e, PhaseFinished) and e.phase == "aiperf"][0]
    assert len(end.detail.completeness_changes) == len(found)
    assert end.detail.completeness_changes[0].correctness_stage == []
    assert end.detail.completeness_changes[0].under_load == ["length_limit"]
    md = (run_dir / "report.md").read_text()
    assert "| aiperf | " in md and f"length_limit {len(found)}" in md
