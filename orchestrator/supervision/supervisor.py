"""The server supervisor: start an incarnation, gate on readiness, watch exit, health and resources, restart
per policy, stop clean; every step an event on the bus. Kind-agnostic: argv, readiness parsing and processes
come from adapters through `ServerParts`."""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict, TypeVar

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from orchestrator.base.errors import ServerError
from orchestrator.config import ServerConfig
from orchestrator.events import (
    Event,
    GpuIdentified,
    GpuSampled,
    Json,
    NoticeContext,
    OrphanKilled,
    OrphanReaped,
    ResourceSampled,
    RestartCause,
    ServerExited,
    ServerHealthChanged,
    ServerLoadSampled,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    ServerState,
    ServerStateChanged,
    Warned,
)
from orchestrator.spine.logs import get_logger
from orchestrator.spine.ports import EventSink, HttpProbe, Readiness, ResourceSampler, ServerProcess, TreeSample
from orchestrator.supervision.server_spec import ServerSpec
from orchestrator.supervision.stop_traceback import stop_traceback

__all__ = ["ServerSpec", "ServerHandle", "SupervisorStatistics", "supervise", "supervised", "signal_name"]

E = TypeVar("E", bound=Event)

log = get_logger("aqbench.supervisor")

_LIVE_STATES = ("ready", "degraded", "unhealthy")
# Output lines get a moment to arrive after an exit so the crash event carries the last words.
_TAIL_WAIT_S = 0.1
_STOP_MARGIN_S = 15.0
_WARN_TIMEOUT_S = 2.0


def signal_name(returncode: int | None) -> str:
    """'SIGINT' for a process killed by signal 2 (return code -2); '' for a normal exit."""
    if returncode is None or returncode >= 0:
        return ""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


# ---------------------------------------------------------------------------------------- handle


class _Tally(TypedDict):
    """The running counts behind SupervisorStatistics, kept by the handle and bumped by its supervisor."""

    restarts: int
    crashes: int
    probes: int
    samples: int
    peak_rss_bytes: int
    last_rss_bytes: int
    peak_gpu_memory_bytes: int | None
    orphans_killed: int
    orphans_reaped: int


class _TimedOut(TypedDict):
    """What a timed-out cleanup names, in its log line and its Warned event."""

    pid: NotRequired[int]
    incarnation: NotRequired[int]
    waited_s: NotRequired[float]


class SupervisorStatistics(msgspec.Struct, frozen=True):
    """Live figures of one supervisor (final numbers come from the journal)."""

    state: str
    incarnation: int
    pid: int
    restarts: int
    crashes: int
    probes: int
    samples: int
    peak_rss_bytes: int
    last_rss_bytes: int
    peak_gpu_memory_bytes: int | None
    orphans_killed: int
    orphans_reaped: int = 0


class ServerHandle:
    """What callers hold while the server runs: its URL, state, and stop()."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.port = spec.port
        self.model = spec.model
        self.base_url = spec.base_url
        self.incarnation = 0
        self.pid = 0
        self.state: ServerState = "starting"
        self.failure = ""
        self._changed = anyio.Event()
        self._sink: EventSink | None = None  # set by the supervisor: where a timed-out stop is said
        self._stop_requested = anyio.Event()
        self._done = anyio.Event()
        self._stats: _Tally = _Tally(
            restarts=0, crashes=0, probes=0, samples=0, peak_rss_bytes=0, last_rss_bytes=0,
            peak_gpu_memory_bytes=None, orphans_killed=0, orphans_reaped=0,
        )

    def _set(self, state: ServerState) -> None:
        self.state = state
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_ready(self, timeout_s: float) -> None:
        """Block until the server is ready (or degraded but serving). Raises ServerError when it failed,
        was stopped, or is not ready within `timeout_s`."""
        with anyio.move_on_after(timeout_s):
            while True:
                if self.state in ("ready", "degraded"):
                    return
                if self.state in ("failed", "stopped"):
                    raise ServerError(f"server at {self.base_url} is {self.state}"
                                      + (f": {self.failure}" if self.failure else ""))
                await self._changed.wait()
        raise ServerError(f"server at {self.base_url} not ready within {timeout_s:g} s (state {self.state}, "
                          f"incarnation {self.incarnation})")

    async def stop(self) -> bool:
        """Stop the server cleanly (stop signal, grace, SIGKILL, orphan sweep) and wait until done.
        Blocks at most stop_grace_s + 2 x 15 s: past that a Warned event says the stop did not finish and
        False is returned. Safe to call twice or after a failure; callers shield it while cancelled."""
        self._stop_requested.set()
        budget_s = self.spec.server.stop_grace_s + 2 * _STOP_MARGIN_S
        with anyio.move_on_after(budget_s):
            await self._done.wait()
            return True
        await _warn_timed_out(self._sink, "server_stop_timed_out", (
            f"the server of model {self.model!r} (pid {self.pid}, incarnation {self.incarnation}) did not finish "
            f"stopping within {budget_s:g} s (server.stop_grace_s + {2 * _STOP_MARGIN_S:g} s); its group was "
            "signalled, what is left may still be running"), {"pid": self.pid, "waited_s": budget_s})
        return False

    def statistics(self) -> SupervisorStatistics:
        return SupervisorStatistics(state=self.state, incarnation=self.incarnation, pid=self.pid,
                                    **self._stats)


# ------------------------------------------------------------------------------------ supervisor


async def _warn_timed_out(sink: EventSink | None, code: str, message: str, detail: _TimedOut) -> None:
    """Say that a bounded wait in a cleanup ran out: a Warned event (itself bounded: the bus may be what is
    stuck), and the log in any case."""
    log.error(code, message=message, **detail)
    if sink is None:
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(_WARN_TIMEOUT_S):
        await sink.publish(Warned(source="supervisor", code=code, message=message,
                                  detail=NoticeContext(pid=detail.get("pid"), incarnation=detail.get("incarnation"))))


class _SafeSink:
    """Publishes to the bus; after the bus closed (run teardown) it logs instead of raising."""

    def __init__(self, bus: EventSink) -> None:
        self._bus = bus

    async def publish(self, event: E) -> E:
        if getattr(self._bus, "closed", False):
            log.warning("event_after_bus_closed", kind=type(event).__name__)
            return event
        return await self._bus.publish(event)


@dataclass
class _Outcome:
    """Why one incarnation ended; `cause` says it for the journal ("" for a stop the run asked for)."""

    kind: Literal["exited", "startup_timeout", "bad_models", "unhealthy", "stopped"]
    message: str
    during: Literal["startup", "run", "stop"] = "run"
    cause: RestartCause = ""


class _RestartBudget:
    """`on-failure`: at most max_restarts within window_s, exponential backoff; `never`: none."""

    def __init__(self, cfg: ServerConfig) -> None:
        self._cfg = cfg.restart
        self._times: deque[float] = deque()

    def next_backoff(self, now: float) -> float | None:
        r = self._cfg
        if r.policy == "never":
            return None
        while self._times and now - self._times[0] > r.window_s:
            self._times.popleft()
        if len(self._times) >= r.max_restarts:
            return None
        self._times.append(now)
        return float(min(r.backoff_max_s, r.backoff_s * 2 ** (len(self._times) - 1)))

    def describe(self) -> str:
        r = self._cfg
        if r.policy == "never":
            return "restart policy is 'never'"
        return f"restart limit reached: {r.max_restarts} restarts within {r.window_s:g} s"


class _Supervisor:
    def __init__(self, spec: ServerSpec, bus: EventSink) -> None:
        self.spec = spec
        self.cfg = spec.server
        self.sink = _SafeSink(bus)
        self.handle = ServerHandle(spec)
        self.handle._sink = self.sink
        self.budget = _RestartBudget(self.cfg)
        self.sampler: ResourceSampler = spec.parts.new_sampler()
        self.limiter = anyio.CapacityLimiter(1)
        self.gpu_warned = False
        self.gpu_named: set[int] = set()  # GPUs whose GpuIdentified is journaled
        self.gpu_notice = ""  # the attribution notice last journaled
        self.http: HttpProbe = spec.parts.new_probe()
        self.first_ready = anyio.Event()
        self.announced = False
        self.ready_now = False  # this incarnation passed its start-up gate
        self.last_in_flight: tuple[int, int] | None = None  # (incarnation, requests) last published

    # -- events and state ------------------------------------------------------------------------

    async def publish(self, event: Event) -> None:
        await self.sink.publish(msgspec.structs.replace(event, source="supervisor"))

    async def set_state(self, state: ServerState, reason: str = "") -> None:
        previous: str = self.handle.state
        if previous == state and self.announced:
            return
        if not self.announced:
            previous, self.announced = "", True  # the very first transition comes from nowhere
        self.handle._set(state)
        log.info("server_state", state=state, previous=previous, reason=reason,
                 incarnation=self.handle.incarnation)
        await self.publish(ServerStateChanged(incarnation=self.handle.incarnation, state=state,
                                              previous=previous, reason=reason))

    # -- probing ---------------------------------------------------------------------------------

    async def _get(self, path: str, timeout_s: float) -> tuple[int, bytes] | str:
        """(status, body), or a string saying why no answer came."""
        return await self.http.get(self.spec.base_url + path, timeout_s)

    async def probe_ready(self, timeout_s: float) -> tuple[Readiness, int]:
        self.handle._stats["probes"] += 1
        got = await self._get("/health/ready", timeout_s)
        if isinstance(got, str):
            return Readiness(ready=False, detail=got), 0
        status, body = got
        return self.spec.parts.kind.parse_readiness(status, body), status

    async def check_models(self) -> list[Json] | str:
        """The listed models when ours is among them; else why not (a string)."""
        got = await self._get("/v1/models", self.cfg.health_timeout_s)
        if isinstance(got, str):
            return got
        status, body = got
        if status != 200:
            return f"GET {self.spec.base_url}/v1/models: HTTP {status}"
        try:
            models = self.spec.parts.kind.listed_models(body)
        except ValueError as exc:
            return str(exc)
        ids = [str(m.get("id")) for m in models]
        if self.spec.model not in ids:
            return (f"/v1/models lists {ids} but not the configured model {self.spec.model!r}; "
                    "check models[].name against the server's --model-name")
        return models

    # -- one incarnation -------------------------------------------------------------------------

    async def run_incarnation(self) -> _Outcome:
        spec, handle = self.spec, self.handle
        handle.incarnation += 1
        inc = handle.incarnation
        self.ready_now = False
        spec.parts.launcher.check_port_free(spec.host, spec.port)
        argv = spec.argv(inc)
        records = spec.records_path(inc)
        if records:
            records.parent.mkdir(parents=True, exist_ok=True)
        spawned_ns = time.monotonic_ns()
        async with spec.parts.launcher.open(
            argv, env=spec.env, cwd=spec.cwd, log_path=spec.run_dir / "server.log", sink=self.sink,
            incarnation=inc, parse_line=spec.parts.kind.parse_log_line,
        ) as proc:
            handle.pid = proc.pid
            await self.publish(ServerSpawned(incarnation=inc, pid=proc.pid, argv=argv, cwd=spec.cwd,
                                             port=spec.port, records_path=str(records or "")))
            await self.set_state("starting", f"spawned pid {proc.pid}")
            outcome: _Outcome | None = None
            try:
                outcome = await self._watch(proc, spawned_ns)
            finally:
                with anyio.CancelScope(shield=True):
                    with anyio.move_on_after(self.cfg.stop_grace_s + _STOP_MARGIN_S) as finishing:
                        await self._finish(proc, outcome)
                    if finishing.cancelled_caught:
                        await _warn_timed_out(self.sink, "server_finish_timed_out", (
                            f"stopping incarnation {inc} (pid {proc.pid}) took over "
                            f"{self.cfg.stop_grace_s + _STOP_MARGIN_S:g} s (server.stop_grace_s + {_STOP_MARGIN_S:g} s);"
                            " the orphan sweep may not have run"), {"pid": proc.pid, "incarnation": inc})
        return outcome

    async def _watch(self, proc: ServerProcess, spawned_ns: int) -> _Outcome:
        """Race process exit, start-up gate, health and a stop request; the first to end decides."""
        result: list[_Outcome] = []
        ready = anyio.Event()

        def finish(outcome: _Outcome, tg: TaskGroup) -> None:
            if not result:
                result.append(outcome)
            tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:

            async def exit_watch() -> None:
                rc = await proc.wait()
                exited_unix_ns = time.time_ns()
                if self.handle._stop_requested.is_set():
                    return  # the stop path reports this exit
                during: Literal["startup", "run"] = "run" if ready.is_set() else "startup"
                await proc.wait_output_closed(_TAIL_WAIT_S)
                tail = proc.output_tail()
                self.handle._stats["crashes"] += 1
                await self.publish(ServerExited(incarnation=self.handle.incarnation, pid=proc.pid,
                                                returncode=rc, signal=signal_name(rc), expected=False,
                                                during=during, output_tail=tail, exited_unix_ns=exited_unix_ns))
                how = f"killed by {signal_name(rc)}" if rc < 0 else f"exit code {rc}"
                last = "\n  ".join(tail[-10:]) or "(nothing printed)"
                finish(_Outcome("exited", f"server pid {proc.pid} exited during {during} ({how}); "
                                          f"last lines:\n  {last}", during, "exited"), tg)

            async def gate_then_health() -> None:
                outcome = await self._startup_gate(proc, spawned_ns)
                if outcome is not None:
                    finish(outcome, tg)
                    return
                ready.set()
                self.ready_now = True
                # A server that lives less than one sample period still gets a figure taken while ready.
                tg.start_soon(self._sample_once, proc, "ready")
                self.first_ready.set()
                finish(await self._health_loop(), tg)

            async def stop_watch() -> None:
                await self.handle._stop_requested.wait()
                finish(_Outcome("stopped", "stop requested", "stop"), tg)

            tg.start_soon(exit_watch)
            tg.start_soon(gate_then_health)
            tg.start_soon(self._sample_loop, proc)
            tg.start_soon(stop_watch)
        return result[0]

    async def _startup_gate(self, proc: ServerProcess, spawned_ns: int) -> _Outcome | None:
        """Probe readiness, then /v1/models; publish ServerReady. None when ready, else why not."""
        cfg, inc = self.cfg, self.handle.incarnation
        probes = 0
        last = "no probe answered yet"
        with anyio.move_on_after(cfg.startup_timeout_s):
            while True:
                probes += 1
                readiness, _ = await self.probe_ready(cfg.health_timeout_s)
                if readiness.ready:
                    models = await self.check_models()
                    if isinstance(models, str):
                        return _Outcome("bad_models", models, "startup", "bad_models")
                    await self.publish(ServerReady(
                        incarnation=inc, pid=proc.pid, startup_ns=time.monotonic_ns() - spawned_ns,
                        probes=probes, models=models, url=self.spec.base_url,
                    ))
                    await self.set_state("degraded" if readiness.degraded else "ready", readiness.detail)
                    return None
                last = readiness.detail
                await anyio.sleep(self.spec.startup_probe_period_s)
        return _Outcome("startup_timeout", f"server pid {proc.pid} not ready after {cfg.startup_timeout_s:g} s "
                                           f"(server.startup_timeout_s, {probes} probes); last probe: {last}",
                        "startup", "startup_timeout")

    async def _health_loop(self) -> _Outcome:
        """Probe every health_period_s; journal changes; unhealthy past the threshold ends the incarnation."""
        cfg, handle = self.cfg, self.handle
        failures = 0
        last: tuple[bool, bool] = (True, handle.state == "degraded")
        next_at = time.monotonic() + cfg.health_period_s
        while True:
            await anyio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += cfg.health_period_s
            readiness, status = await self.probe_ready(cfg.health_timeout_s)
            failures = 0 if readiness.ready else failures + 1
            now = (readiness.ready, readiness.degraded)
            if now != last:
                last = now
                await self.publish(ServerHealthChanged(
                    incarnation=handle.incarnation, healthy=readiness.ready, degraded=readiness.degraded,
                    status_code=status, consecutive_failures=failures, detail=readiness.detail,
                ))
            state: ServerState = ("degraded" if readiness.degraded else "ready") if readiness.ready else "unhealthy"
            await self.set_state(state, readiness.detail)
            if failures >= cfg.health_failure_threshold:
                # An answer that says "not ready" (a front end whose worker died: 503) against none at all (a hang).
                return _Outcome("unhealthy", f"{failures} readiness probes failed in a row "
                                             f"(server.health_failure_threshold = {cfg.health_failure_threshold}); "
                                             f"last: {readiness.detail}",
                                cause="unready" if status else "unresponsive")

    async def _sample_loop(self, proc: ServerProcess) -> None:
        """Sample the tree every sample_period_s from spawn on; remember descendants for the sweep."""
        period = self.cfg.sample_period_s
        next_at = time.monotonic()
        while True:
            if not await self._sample_once(proc, "period"):
                return
            next_at += period
            await anyio.sleep(max(0.0, next_at - time.monotonic()))

    async def _sample_once(self, proc: ServerProcess, trigger: str) -> bool:
        """One sample, published; False when the tree is gone. Samples before readiness are flagged and
        never count toward the peak (start-up memory is not what the server needs to serve)."""
        sample = await anyio.to_thread.run_sync(self.sampler.sample, proc.pid, limiter=self.limiter)
        if sample is None:
            return False
        proc.remember(sample.pids)
        stats = self.handle._stats
        pre_ready = not self.ready_now
        stats["samples"] += 1
        stats["last_rss_bytes"] = sample.rss_bytes
        if not pre_ready:
            stats["peak_rss_bytes"] = max(stats["peak_rss_bytes"], sample.rss_bytes)
            if sample.gpu_memory_bytes is not None:
                stats["peak_gpu_memory_bytes"] = max(stats["peak_gpu_memory_bytes"] or 0, sample.gpu_memory_bytes)
        await self.publish(ResourceSampled(
            incarnation=self.handle.incarnation, pid=sample.pid, rss_bytes=sample.rss_bytes,
            uss_bytes=sample.uss_bytes, cpu_percent=sample.cpu_percent, threads=sample.threads,
            open_files=sample.open_files, children=sample.children, gpu_memory_bytes=sample.gpu_memory_bytes,
            pre_ready=pre_ready, trigger=trigger,
            gpu_memory_scope=sample.gpu_memory_scope if sample.gpu_memory_bytes is not None else "",
        ))
        await self._publish_gpus(sample)
        if not pre_ready and trigger == "period":
            await self._read_in_flight()
        if self.sampler.gpu_unavailable and not self.gpu_warned:
            self.gpu_warned = True
            await self.publish(Warned(code="gpu_sampling_unavailable", message=self.sampler.gpu_unavailable))
        return True

    async def _publish_gpus(self, sample: TreeSample) -> None:
        """Each GPU's figures; its identity the first time it is seen; the attribution notice when it changes."""
        for ident in sample.gpu_identities:
            if ident.index not in self.gpu_named:
                self.gpu_named.add(ident.index)
                await self.publish(GpuIdentified(gpu=ident))
        for gpu in sample.gpus:
            await self.publish(GpuSampled(
                index=gpu.index, name=gpu.name, memory_used_bytes=gpu.memory_used_bytes,
                memory_total_bytes=gpu.memory_total_bytes, utilization_percent=gpu.utilization_percent,
                utilization_mean_percent=gpu.utilization_mean_percent, utilization_samples=gpu.utilization_samples,
                power_w=gpu.power_w, temperature_c=gpu.temperature_c, sm_clock_mhz=gpu.sm_clock_mhz,
                throttle_reasons=gpu.throttle_reasons, processes=gpu.processes,
                tree_memory_bytes=gpu.tree_memory_bytes))
        if sample.gpu_notice and sample.gpu_notice.split(" (")[0] != self.gpu_notice.split(" (")[0]:
            self.gpu_notice = sample.gpu_notice
            await self.publish(Warned(code="gpu_pid_namespace", message=sample.gpu_notice))

    async def _read_in_flight(self) -> None:
        """The server's own gauge of requests in flight (a kind that has one), published when it changed.
        A failed read publishes nothing: the health probe judges the server, not this."""
        kind = self.spec.parts.kind
        if not kind.in_flight_path:
            return
        got = await self._get(kind.in_flight_path, self.cfg.health_timeout_s)
        if isinstance(got, str) or got[0] != 200:
            return
        in_flight = kind.parse_in_flight(got[1])
        if in_flight is None or (self.handle.incarnation, in_flight) == self.last_in_flight:
            return
        self.last_in_flight = (self.handle.incarnation, in_flight)
        await self.publish(ServerLoadSampled(incarnation=self.handle.incarnation, in_flight=in_flight))

    async def _finish(self, proc: ServerProcess, outcome: _Outcome | None) -> None:
        """Stop what is left of this incarnation (shielded by the caller) and sweep its orphans."""
        cfg, inc = self.cfg, self.handle.incarnation
        if proc.returncode is None:
            reason = outcome.message if outcome else "supervisor cancelled"
            if self.ready_now:  # the last figure of a live server, however short its life
                await self._sample_once(proc, "stop")
            await self.set_state("stopping", reason)
            sig = signal.Signals[cfg.stop_signal]
            result = await proc.stop(sig, cfg.stop_grace_s)
            rc = result.returncode
            # Uvicorn re-raises the stop signal: dying of our own signal (or 128+sig from a shell) is clean.
            expected = rc in (0, -sig, 128 + sig) or (result.forced and rc == -signal.SIGKILL)
            await proc.wait_output_closed(_TAIL_WAIT_S)
            tail = proc.output_tail()
            await self.publish(ServerExited(incarnation=inc, pid=proc.pid, returncode=rc, signal=signal_name(rc),
                                            expected=expected, during="stop", output_tail=tail,
                                            stop_traceback=stop_traceback(tail, sig) if expected else "",
                                            stopped_for=outcome.cause if outcome else ""))
            if result.forced:
                await self.publish(Warned(code="server_stop_forced", message=(
                    f"server pid {proc.pid} did not stop within {cfg.stop_grace_s:g} s of {cfg.stop_signal} "
                    "(server.stop_grace_s); its process group was killed with SIGKILL"),
                    detail=NoticeContext(pid=proc.pid, incarnation=inc)))
        else:
            await proc.stop(signal.SIGKILL, 0.0)  # the leader died: kill what is left of its group
        for orphan in await proc.sweep_orphans():
            if orphan.dead:
                self.handle._stats["orphans_reaped"] += 1
                log.warning("orphan_reaped", pid=orphan.pid, name=orphan.name, found_by=orphan.found_by,
                            returncode=orphan.returncode)
                await self.publish(OrphanReaped(incarnation=inc, pid=orphan.pid, name=orphan.name,
                                                returncode=orphan.returncode, found_by=orphan.found_by))
                continue
            self.handle._stats["orphans_killed"] += 1
            log.warning("orphan_killed", pid=orphan.pid, cmdline=orphan.cmdline, found_by=orphan.found_by)
            await self.publish(OrphanKilled(incarnation=inc, pid=orphan.pid, cmdline=orphan.cmdline,
                                            found_by=orphan.found_by))

    # -- the whole life ----------------------------------------------------------------------------

    async def run(self, task_status: TaskStatus[ServerHandle]) -> None:
        """Hand the handle to `task_status` once the first incarnation is ready; raise its failure."""
        errors: list[ServerError] = []
        async with anyio.create_task_group() as tg:

            async def life() -> None:
                try:
                    await self._life()
                except ServerError as exc:
                    errors.append(exc)
                finally:
                    self.first_ready.set()

            tg.start_soon(life)
            # started() is called from this task, not a nested one: anyio reparents the calling task.
            await self.first_ready.wait()
            if not errors:
                task_status.started(self.handle)
        if errors:
            raise errors[0]

    async def _life(self) -> None:
        handle = self.handle
        first = True
        failed = False
        try:
            while True:
                try:
                    outcome = await self.run_incarnation()
                except ServerError as exc:
                    outcome = _Outcome("exited", str(exc), "startup", "exited")  # port in use, cannot exec
                if outcome.kind == "stopped":
                    return
                if first and outcome.during == "startup":
                    failed = True
                    handle.failure = outcome.message
                    await self.set_state("failed", outcome.message)
                    raise ServerError(outcome.message)
                first = False
                backoff = self.budget.next_backoff(time.monotonic())
                if backoff is None:
                    failed = True
                    handle.failure = f"{outcome.message}; {self.budget.describe()}"
                    await self.set_state("failed", handle.failure)
                    raise ServerError(f"server for model {self.spec.model!r} failed: {handle.failure}")
                handle._stats["restarts"] += 1
                await self.set_state("restarting", outcome.message)
                await self.publish(ServerRestarting(incarnation=handle.incarnation + 1,
                                                    attempt=handle._stats["restarts"], backoff_s=backoff,
                                                    reason=outcome.message, cause=outcome.cause))
                with anyio.move_on_after(backoff):
                    await handle._stop_requested.wait()
                if handle._stop_requested.is_set():
                    return
        finally:
            try:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_STOP_MARGIN_S) as closing:
                    await self.http.aclose()
                    await anyio.to_thread.run_sync(self.sampler.close, abandon_on_cancel=True)
                    if not failed:
                        await self.set_state("stopped", "stop requested" if handle._stop_requested.is_set()
                                             else "supervisor cancelled")
                if closing.cancelled_caught:
                    await _warn_timed_out(self.sink, "server_cleanup_timed_out", (
                        f"closing the supervisor of model {self.spec.model!r} took over {_STOP_MARGIN_S:g} s "
                        "(HTTP session, sampler, final state); it was left unfinished"),
                        {"waited_s": _STOP_MARGIN_S})
            finally:
                handle._done.set()


async def supervise(spec: ServerSpec, bus: EventSink, *,
                    task_status: TaskStatus[ServerHandle] = anyio.TASK_STATUS_IGNORED) -> None:
    """Run the server of `spec` until stopped or failed. Use `handle = await tg.start(supervise, spec, bus)`:
    returns when the first incarnation is ready; raises ServerError (in the caller) when it cannot start.

    Later it restarts per policy and raises ServerError when the policy gives up. Cancellation stops the
    server (shielded: signal, grace, SIGKILL, orphan sweep) before returning.
    """
    await _Supervisor(spec, bus).run(task_status)


@asynccontextmanager
async def supervised(spec: ServerSpec, bus: EventSink) -> AsyncIterator[ServerHandle]:
    """`async with supervised(spec, bus) as handle:` the server runs inside the block and is stopped
    (and its events published) before the block is left, even on cancellation. Raises ServerError."""
    try:
        async with anyio.create_task_group() as tg:
            handle: ServerHandle = await tg.start(supervise, spec, bus)
            try:
                yield handle
            finally:
                with anyio.CancelScope(shield=True):
                    await handle.stop()  # bounded inside; a timed-out stop is a Warned event
    except BaseExceptionGroup as group:
        errors = [e for e in group.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        if len(errors) == 1:
            raise errors[0] from None
        raise
