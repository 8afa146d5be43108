"""`aqbench doctor`: required checks pass on this machine's default config; problems say how to fix."""

from __future__ import annotations

from pathlib import Path

from orchestrator.commands.doctor import run_checks
from orchestrator.config import load_config

ROOT = Path(__file__).resolve().parents[2]


class TestDoctor:
    def test_default_config_passes_required_checks(self) -> None:
        """With the shipped bench.toml every required check passes and AIPerf's fingerprint is shown."""
        checks = run_checks(load_config(ROOT / "bench.toml"))
        failed = [c for c in checks if c.required and not c.ok]
        assert not failed, failed
        names = {c.name for c in checks}
        assert {"aiperf", "aiperf live tap", "disk", "loopback", "server", "gpu"} <= names
        assert "fingerprint sha256:" in next(c.detail for c in checks if c.name == "aiperf")

    def test_missing_server_binary_and_bundle_fail_with_fixes(self, tmp_path: Path) -> None:
        """A trtmc-server config whose binary and bundle do not exist fails both checks with a fix."""
        text = (ROOT / "bench.toml").read_text().replace('kind = "reference"', 'kind = "trtmc-server"')
        text = text.replace('argv = ["{python}", "-m", "adapters.reference",',
                            'argv = ["/nonexistent/trtmc-server", "{bundle}",')
        text = text.replace('[server]\n', f'[server]\nbundle = "{tmp_path / "missing.bundle"}"\n', 1)
        cfg_path = tmp_path / "bench.toml"
        cfg_path.write_text(text)
        checks = {c.name: c for c in run_checks(load_config(cfg_path))}
        assert not checks["server"].ok and "PATH" in checks["server"].fix
        bundle = next(c for name, c in checks.items() if name.startswith("bundle"))
        assert not bundle.ok and "build the bundle" in bundle.fix

    def test_server_flags_are_checked_against_its_help(self, tmp_path: Path) -> None:
        """Each --flag of [server] argv must appear in the binary's --help; a missing one is named."""
        fake = tmp_path / "trtmc-server"
        fake.write_text("#!/bin/sh\necho 'usage: trtmc-server BUNDLE [--model-name M] [--host H] [--port P] "
                        "[--replicas N] [--startup-timeout S]'\n")
        fake.chmod(0o755)
        text = (ROOT / "bench.toml").read_text().replace('kind = "reference"', 'kind = "trtmc-server"')
        text = text.replace('argv = ["{python}", "-m", "adapters.reference",', f'argv = ["{fake}", "{{bundle}}",')
        cfg_path = tmp_path / "bench.toml"
        cfg_path.write_text(text)
        check = next(c for c in run_checks(load_config(cfg_path)) if c.name == "server flags")
        assert not check.ok and check.required
        assert check.detail.endswith("--help does not list --records (used in [server] argv)")
