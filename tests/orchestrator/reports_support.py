"""A qualify journal of four models (ok, no audio, weak, crashy), built event by event, for the report tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from config_support import make_config

from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfPhase,
    AiperfSettings,
    AiperfStarted,
    AnswerMismatch,
    AnyEvent,
    CapabilityProbed,
    CorrectnessPhase,
    DatasetPhase,
    GateEvaluated,
    GpuSampled,
    HostFacts,
    HttpExchange,
    ModelPhase,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    RequestUnmatched,
    ResourceSampled,
    ResultRow,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerPhase,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    TransportEvidence,
    VerdictReached,
    Warned,
)
from orchestrator.spine.journal import decode_event, encode_event

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000
MODELS = ["ref-ok", "no-audio", "weak", "crashy"]
ITEMS = {"i1": "content", "i2": "content", "i3": "pitch", "i4": "pitch"}  # i1, i2 have speech


class _Journal:
    """Builds a journal the way the bus would stamp it: increasing seq and ts_ns."""

    def __init__(self) -> None:
        self.events: list[AnyEvent] = []
        self.t = T0

    def add(self, ev: Any, *, at: int | None = None) -> None:
        self.t = at if at is not None else self.t + S // 100
        stamped = msgspec.structs.replace(ev, run_id="run-fixture", seq=len(self.events) + 1,
                                          ts_ns=self.t, mono_ns=self.t - T0)
        # Through the journal's own encoding, as a real run's events are: payload dicts become Structs.
        self.events.append(decode_event(encode_event(stamped)))

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(encode_event(e) + b"\n" for e in self.events))
        return path


def _server(j: _Journal, m: str, pid: int) -> None:
    j.add(PhaseStarted(phase="server", model=m))
    j.add(ServerSpawned(incarnation=1, pid=pid, argv=["python", "-m", "adapters.reference", "--model-name", m]))
    j.add(ServerReady(incarnation=1, pid=pid, startup_ns=1_500_000_000, models=[{"id": m}]))
    for rss in (100, 150, 120):
        j.add(ResourceSampled(incarnation=1, pid=pid, rss_bytes=rss * 2**20))
    j.add(PhaseFinished(phase="server", model=m, outcome="passed",
                        detail=ServerPhase(bundle_sha256="b" * 64, argv=["srv", m])))


def _capability(j: _Journal, m: str) -> None:
    j.add(PhaseStarted(phase="capability", model=m))
    for check in ("transport", "conditioning", "text_only", "transcription_only"):
        j.add(CapabilityProbed(model=m, check=check, passed=True))  # type: ignore[arg-type]
    j.add(PhaseFinished(phase="capability", model=m, outcome="passed"))


def _verdicts(j: _Journal, m: str, table: dict[tuple[str, str], str]) -> None:
    for (item, arm), verdict in table.items():
        j.add(VerdictReached(model=m, path="http", item_id=item, arm=arm, verdict=verdict,  # type: ignore[arg-type]
                             answer="friday" if verdict == "wrong" else "thursday", gold="thursday",
                             item_kind=ITEMS[item], scoring="exact", request_id=f"{m}-{item}-{arm}"))


def _request(j: _Journal, window: str, rid: str, *, phase: str, start_s: float, latency: float | None,
             ok: bool = True, cause: str = "ok", handler: float | None = None, model_call: float | None = None,
             lifecycle: float | None = None, rule: str = "") -> None:
    start = T0 + int(start_s * S)
    end = start + int((latency or 1.0) * 1_000_000)
    j.add(RequestCorrelated(request_id=rid, window=window, phase=phase, item_id="i1", arm="audio", ok=ok,  # type: ignore[arg-type]
                            cause=cause, answer="thursday" if ok else None, request_start_ns=start,  # type: ignore[arg-type]
                            request_end_ns=end, request_latency_ms=latency, client_lifecycle_ms=lifecycle,
                            handler_ms=handler, model_call_ms=model_call,
                            timing_scope="public_task_call_wall" if model_call is not None else "",
                            audio_seconds=2.0 if ok else None, incarnation=1, cause_rule=rule), at=max(end, j.t + 1))


def _result(j: _Journal, m: str, status: str, stage: str = "", reason: str = "") -> None:
    j.add(ModelResult(model=m, status=status, failed_stage=stage, row=ResultRow(
        checkpoint=f"org/{m}", profile=f"{m}-profile", revision="r1", family="audioqa",
        native_task="AudioQA", precision="bf16", bundle_sha256="b" * 64,
        qualify_command=f"aqbench qualify --config bench.toml --model {m}",
        aiperf_command=f"aiperf profile --model {m} --concurrency 2", reason=reason)))
    j.add(PhaseFinished(phase="model", model=m, outcome=status))


def qualify_journal(*, finished: bool = True) -> _Journal:
    """Four models: aiperf-qualified, unsupported at capability, failed at correctness, failed at aiperf."""
    j = _Journal()
    j.add(RunStarted(command="qualify", argv=["aqbench", "qualify"], config_path="/w/bench.toml",
                     config_sha256="f" * 64,
                     config=make_config(models=[{"name": m, "correctness": {"arm": "audio"}} for m in MODELS]),
                     tool_versions={"aqbench": "0.1.0", "aqbench_commit": "abc123", "python": "3.11.2",
                                    "aiperf": "0.13.0"},
                     host=HostFacts(os="Linux 6.1", cpu="Test CPU", cpus=2, hostname="box")), at=T0)
    j.add(PhaseFinished(phase="dataset", outcome="passed", detail=DatasetPhase(
        name="audioqa-v1", identity="d" * 64, path="/w/datasets/audioqa-v1", items=4,
        arms=["audio", "silence", "transcript"])))

    # 1. ref-ok: qualified.
    m = "ref-ok"
    j.add(PhaseStarted(phase="model", model=m, detail=ModelPhase(checkpoint=f"org/{m}")))
    _server(j, m, 100)
    _capability(j, m)
    j.add(PhaseStarted(phase="correctness", model=m))
    for i in range(2):  # the correctness stage's probes are accounted in their own window
        _request(j, f"{m}/correctness", f"probe{i}", phase="profiling", start_s=1 + i, latency=1000.0)
    _verdicts(j, m, {("i1", "audio"): "correct", ("i2", "audio"): "correct", ("i3", "audio"): "correct",
                     ("i4", "audio"): "wrong", ("i1", "silence"): "wrong", ("i2", "silence"): "wrong",
                     ("i3", "silence"): "correct", ("i4", "silence"): "wrong", ("i1", "transcript"): "correct",
                     ("i2", "transcript"): "wrong"})
    j.add(GateEvaluated(model=m, gate="min_pass_rate", scope="arm:audio", required=0.7, observed=0.75, passed=True))
    j.add(PhaseFinished(phase="correctness", model=m, outcome="passed", detail=CorrectnessPhase()))
    j.add(PhaseStarted(phase="identity", model=m))
    j.add(PhaseFinished(phase="identity", model=m, outcome="skipped"))
    j.add(PhaseStarted(phase="aiperf", model=m))
    w = f"{m}/aiperf"
    j.add(AiperfStarted(window=w, argv=["aiperf"], shell="aiperf profile --model ref-ok", artifact_dir="/a",
                        version="0.13.0", fingerprint="fp-1"))
    for i in range(2):
        _request(j, w, f"w{i}", phase="warmup", start_s=5 + i, latency=500.0)
    for i, lat in enumerate([10.0, 20.0, 30.0, 40.0, 100.0]):
        _request(j, w, f"p{i}", phase="profiling", start_s=10 + i, latency=lat, handler=lat - 2,
                 model_call=lat - 5, lifecycle=lat + 2)
    for verdict in ("correct", "correct", "correct", "correct", "wrong"):
        j.add(VerdictReached(model=m, path="aiperf", item_id="i1", arm="audio", verdict=verdict,  # type: ignore[arg-type]
                             item_kind="content"))
    j.add(AccountingChecked(window=w, balanced=True, issued={"warmup": 2, "profiling": 5}))
    j.add(AiperfExited(window=w, returncode=0, classification="complete", duration_ns=5 * S))
    j.add(PhaseFinished(phase="aiperf", model=m, outcome="passed",
                        detail=AiperfPhase(settings=AiperfSettings(concurrency=2, requests=5))))
    _result(j, m, "aiperf-qualified")

    # 2. no-audio: the server rejects input_audio with 400.
    m = "no-audio"
    j.add(PhaseStarted(phase="model", model=m))
    _server(j, m, 200)
    j.add(PhaseStarted(phase="capability", model=m))
    j.add(CapabilityProbed(model=m, check="transport", passed=False, reason="input_audio rejected with HTTP 400",
                           evidence=TransportEvidence(with_audio=HttpExchange(
                               status=400, body="{\"error\": \"unsupported content part: input_audio\"}"))))
    j.add(PhaseFinished(phase="capability", model=m, outcome="failed", reason="input_audio rejected with HTTP 400"))
    _result(j, m, "unsupported", "capability", "input_audio rejected with HTTP 400")

    # 3. weak: correctness below its gate.
    m = "weak"
    j.add(PhaseStarted(phase="model", model=m))
    _server(j, m, 300)
    _capability(j, m)
    j.add(PhaseStarted(phase="correctness", model=m))
    _verdicts(j, m, {("i1", "audio"): "correct", ("i2", "audio"): "wrong", ("i3", "audio"): "unparsed",
                     ("i4", "audio"): "correct", ("i1", "silence"): "wrong", ("i2", "silence"): "wrong",
                     ("i3", "silence"): "wrong", ("i4", "silence"): "wrong"})
    j.add(GateEvaluated(model=m, gate="min_pass_rate", scope="arm:audio", required=0.9, observed=0.5, passed=False))
    j.add(GateEvaluated(model=m, gate="min_pass_rate_by_kind", scope="kind:pitch", required=0.8, observed=0.5,
                        passed=False))
    j.add(PhaseFinished(phase="correctness", model=m, outcome="failed", reason="pass rate 0.5 < 0.9",
                        detail=CorrectnessPhase(failing_items=["i2", "i3"])))
    _result(j, m, "failed", "correctness", "pass rate 0.5 < 0.9")

    # 4. crashy: the server dies under AIPerf load.
    m = "crashy"
    j.add(PhaseStarted(phase="model", model=m))
    _server(j, m, 400)
    j.add(GpuSampled(index=0, name="NVIDIA H200", memory_used_bytes=3 * 2**30, memory_total_bytes=141 * 2**30))
    j.add(ResourceSampled(incarnation=1, pid=400, rss_bytes=180 * 2**20, gpu_memory_bytes=2 * 2**30))
    _capability(j, m)
    j.add(PhaseStarted(phase="aiperf", model=m))
    w = f"{m}/aiperf"
    j.add(AiperfStarted(window=w, argv=["aiperf"], shell="aiperf profile --model crashy", artifact_dir="/b",
                        version="0.13.0", fingerprint="fp-1"))
    _request(j, w, "cw0", phase="warmup", start_s=100, latency=40.0)
    for i, lat in enumerate([50.0, 60.0, 70.0]):
        _request(j, w, f"c{i}", phase="profiling", start_s=101 + i, latency=lat, handler=lat - 1)
    j.add(ServerExited(incarnation=1, pid=400, returncode=-9, signal="SIGKILL", during="run",
                       output_tail=["loading", "Killed"]))
    for i, (cause, rule) in enumerate([("server_crash", "open_at_exit"), ("server_crash", "open_at_exit"),
                                       ("connection", "refused")]):
        _request(j, w, f"x{i}", phase="profiling", start_s=104, latency=None, ok=False, cause=cause, rule=rule)
    j.add(RequestUnmatched(request_id="x2", half="client", cause="no_server_record", window=w, phase="profiling"))
    j.add(ServerRestarting(incarnation=2, attempt=1, backoff_s=1.0, reason="crashed"))
    j.add(ServerSpawned(incarnation=2, pid=401, argv=["srv"]))
    j.add(ServerReady(incarnation=2, pid=401, startup_ns=900_000_000))
    j.add(AccountingChecked(window=w, balanced=True, issued={"warmup": 1, "profiling": 6}))
    j.add(AiperfExited(window=w, returncode=1, classification="partial", reason="3 requests failed"))
    j.add(PhaseFinished(phase="aiperf", model=m, outcome="failed", reason="3 of 6 requests failed",
                        detail=AiperfPhase(identity_mismatches=[AnswerMismatch(
                            item_id="i1", arm="audio", answers={"http": "thursday", "aiperf": "friday"})],
                            settings=AiperfSettings(concurrency=2))))
    _result(j, m, "failed", "aiperf", "3 of 6 requests failed")
    j.add(Warned(code="slow_start", message="crashy took 1.5 s to start"))
    if finished:
        j.add(RunFinished(status="failed", exit_code=1))
    return j

