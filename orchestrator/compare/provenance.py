"""What differs between two runs (tools, server, bundle, dataset, hardware, workload) and which of
those differences make their figures incomparable. Pure: reads RunSamples, decides nothing else."""

from __future__ import annotations

from orchestrator.compare.load import WORKLOAD_FLAGS_INFO, RunSamples
from orchestrator.compare.schema import ProvenanceRow

__all__ = ["provenance_diff"]

_UNKNOWN = "(not journaled)"


def _tool(run: RunSamples, name: str) -> str:
    return run.started.tool_versions.get(name, "") if run.started else ""


def _aiperf(run: RunSamples) -> str:
    return ", ".join(sorted(run.aiperf_versions)) or _tool(run, "aiperf")


def _dataset(run: RunSamples) -> dict[str, str]:
    """The dataset as the run journaled it (qualify), else as its config snapshot names it."""
    if run.dataset:
        return run.dataset
    cfg = run.config
    return {"name": cfg.dataset.name if cfg else "", "path": cfg.dataset.path if cfg else "", "identity": "",
            "items": ""}


def _row(name: str, base: str, cand: str, *, blocks: bool = False) -> ProvenanceRow:
    differs = base != cand
    return ProvenanceRow(name=name, baseline=base or _UNKNOWN, candidate=cand or _UNKNOWN, differs=differs,
                         blocks=blocks and differs)


def provenance_diff(base: RunSamples, cand: RunSamples, models: list[str]) -> tuple[list[ProvenanceRow], list[str]]:
    """Rows for every fact of both runs, and the reasons (first) that forbid comparing figures."""
    rows: list[ProvenanceRow] = []
    refusals: list[str] = []
    db, dc = _dataset(base), _dataset(cand)
    # The content hash decides when both runs journaled it; otherwise the dataset's name and folder.
    by_identity = bool(db["identity"] and dc["identity"])
    for key in ("name", "identity", "path", "items"):
        blocks = (key == "identity") if by_identity else key in ("name", "path")
        rows.append(_row(f"dataset {key}", db[key], dc[key], blocks=blocks))
    if any(r.blocks for r in rows):
        what = (f"identity {db['identity']} vs {dc['identity']}" if by_identity else
                f"{db['name'] or db['path']!r} vs {dc['name'] or dc['path']!r}")
        refusals.append(f"different datasets ({what}): per-item figures and the workload mix differ")
    cb, cc = base.config, cand.config
    rows += [
        _row("aqbench version", _tool(base, "aqbench"), _tool(cand, "aqbench")),
        _row("aqbench commit", _tool(base, "aqbench_commit"), _tool(cand, "aqbench_commit")),
        _row("AIPerf version", _aiperf(base), _aiperf(cand)),
        _row("server kind", cb.server.kind if cb else "", cc.server.kind if cc else ""),
        _row("server argv", " ".join(cb.server.argv) if cb else "", " ".join(cc.server.argv) if cc else ""),
        _row("server models (/v1/models)", base.server_models, cand.server_models),
        _row("bundle sha256", ", ".join(sorted(base.bundle_sha256)), ", ".join(sorted(cand.bundle_sha256))),
        _row("GPU", "; ".join(sorted(base.gpus)) or "none", "; ".join(sorted(cand.gpus)) or "none"),
        _row("CPU", f"{base.host.cpu} x{base.host.cpus}", f"{cand.host.cpu} x{cand.host.cpus}"),
        _row("host", base.host.hostname, cand.host.hostname),
        _row("command", base.started.command if base.started else "", cand.started.command if cand.started else ""),
    ]
    for model in models:
        mb, mc = base.models[model], cand.models[model]
        # model_call_ms of different scopes (e.g. a public task call against a worker round trip) differ
        # by definition: the server-side figures are then not comparable.
        rows.append(_row(f"{model}: model_call_ms scope", ",".join(sorted(mb.timing_scopes)),
                         ",".join(sorted(mc.timing_scopes)), blocks=bool(mb.timing_scopes and mc.timing_scopes)))
        arms_b, arms_c = ",".join(mb.arms), ",".join(mc.arms)
        rows.append(_row(f"{model}: arms under load", arms_b, arms_c, blocks=bool(arms_b and arms_c)))
        for flag in sorted(set(mb.workload) | set(mc.workload)):
            blocks = flag not in WORKLOAD_FLAGS_INFO
            rows.append(_row(f"{model}: AIPerf {flag}", mb.workload.get(flag, ""), mc.workload.get(flag, ""),
                             blocks=blocks))
        differing = [r for r in rows if r.blocks and r.name.startswith(f"{model}: ")]
        if differing:
            refusals.append(f"different workload settings for {model}: " + "; ".join(
                f"{r.name.removeprefix(model + ': ')} {r.baseline} vs {r.candidate}" for r in differing))
    return rows, refusals
