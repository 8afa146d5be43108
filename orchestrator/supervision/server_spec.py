"""What it takes to start, probe and stop one model's server: the rendered `[server]` section, its port
fixed once, and the per-model, per-incarnation paths (records files). Pure: starts nothing.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.config import Config, ModelConfig, ServerConfig
from orchestrator.spine.ports import ServerParts

__all__ = ["ServerSpec"]


def _path_part(name: str) -> str:
    """`name` as one path component: characters other than letters, digits, `.`, `_`, `-` become `_`."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")
    return safe or "model"


@dataclass(frozen=True)
class ServerSpec:
    """Everything needed to start, probe and stop the server of one model; the port is fixed once."""

    parts: ServerParts
    server: ServerConfig
    argv_template: tuple[str, ...]
    values: dict[str, str]
    model: str
    host: str
    port: int
    run_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    # Start-up probes come faster than health probes so readiness is noticed soon after it happens.
    startup_probe_period_s: float = 0.1

    @classmethod
    def from_config(
        cls, cfg: Config, model: ModelConfig, run_dir: Path, *, parts: ServerParts
    ) -> ServerSpec:
        """Render the `[server]` section for `model`. Picks a free loopback port when none is set.

        `parts` are the adapters for `server.kind`, chosen by the composition root. Raises ConfigError
        when argv cannot be rendered.
        """
        srv = cfg.server
        port = srv.port or parts.launcher.pick_free_port(srv.host)
        values = {
            "python": sys.executable,
            "host": srv.host,
            "port": str(port),
            "bundle": model.bundle or srv.bundle,
            "model": model.name,
            "replicas": str(srv.replicas),
            "run_dir": str(run_dir),
        }
        spec = cls(
            parts=parts, server=srv, argv_template=(*srv.argv, *model.server_args), values=values, model=model.name,
            host=srv.host, port=port, run_dir=run_dir, env=dict(srv.env), cwd=srv.cwd,
        )
        spec.argv(1)  # render once now so a bad template fails before anything starts
        return spec

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def records_path(self, incarnation: int) -> Path | None:
        """`run_dir/server/<model>/records-<incarnation>.jsonl` when argv asks for `{records}`, else None.
        One file per model and incarnation: a run of several models never gives two servers one file."""
        if not any("{records}" in arg for arg in self.argv_template):
            return None
        return self.run_dir / "server" / _path_part(self.model) / f"records-{incarnation}.jsonl"

    def argv(self, incarnation: int) -> list[str]:
        records = self.records_path(incarnation)
        values = {**self.values, "records": str(records) if records else ""}
        return self.parts.kind.render_argv(self.argv_template, values)
