"""`aqbench doctor`: required checks pass on this machine's default config; problems say how to fix."""

from __future__ import annotations

from pathlib import Path

from orchestrator.commands.doctor import run_checks
from orchestrator.config import load_config

ROOT = Path(__file__).resolve().parents[3]


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
        assert not check.ok and not check.required and check.warning
        assert f"`{fake} --help`" in check.detail and "it does not list --records;" in check.detail

    def test_module_launcher_runs_the_modules_help_and_a_hidden_flag_is_a_warning(
            self, tmp_path: Path, capsys) -> None:
        """`python -P -m trtmc_server ...`: doctor runs `python -P -m trtmc_server --help` (not python's
        own), and a flag that help hides (trtmc-server's --worker-binary) is a warning naming it; doctor
        still exits 0."""
        import sys

        from orchestrator.cli import main

        pkg = tmp_path / "lib" / "fake_trtmc_server"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "__main__.py").write_text(
            "import argparse\n"
            "p = argparse.ArgumentParser(prog='trtmc-server')\n"
            "for f in ('--model-name', '--host', '--port', '--replicas', '--records'):\n"
            "    p.add_argument(f)\n"
            "p.add_argument('--worker-binary', help=argparse.SUPPRESS)\n"
            "p.add_argument('bundle')\n"
            "p.parse_args()\n")
        worker = tmp_path / "worker"
        worker.write_text("")
        bundle = tmp_path / "m.bundle"
        bundle.write_text("")
        text = (ROOT / "bench.toml").read_text().replace('kind = "reference"', 'kind = "trtmc-server"')
        text = text.replace('argv = ["{python}", "-m", "adapters.reference",',
                            f'argv = ["{sys.executable}", "-P", "-m", "fake_trtmc_server", "{{bundle}}", '
                            f'"--worker-binary", "{worker}",')
        # The module is found only through [server] env, as the supervisor would start it.
        text = text.replace('[server]\n', f'[server]\nbundle = "{bundle}"\nenv = {{ PYTHONPATH = '
                                           f'"{tmp_path / "lib"}:{ROOT}" }}\n', 1)
        cfg_path = tmp_path / "bench.toml"
        cfg_path.write_text(text)
        check = next(c for c in run_checks(load_config(cfg_path)) if c.name == "server flags")
        assert f"`{sys.executable} -P -m fake_trtmc_server --help`" in check.detail
        assert check.warning and not check.required and "it does not list --worker-binary;" in check.detail
        assert "--records" not in check.detail.split("it does not list")[1]
        capsys.readouterr()
        assert main(["doctor", "--config", str(cfg_path)]) == 0
        out = capsys.readouterr().out
        assert "warn server flags:" in out and "--worker-binary" in out and "FAIL server flags" not in out
        assert f"ok   server --worker-binary: {worker} exists" in out

    def test_what_trtmc_server_would_reject_fails(self, tmp_path: Path) -> None:
        """A directory as trtmc-server's bundle and a --worker-binary that does not exist fail, each with a
        fix; a --help that fails is said with its last line, not as every flag missing."""
        fake = tmp_path / "trtmc-server"
        fake.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                        "echo 'ModuleNotFoundError: No module named trtmc_server' >&2\nexit 1\n")
        fake.chmod(0o755)
        text = (ROOT / "bench.toml").read_text().replace('kind = "reference"', 'kind = "trtmc-server"')
        text = text.replace('argv = ["{python}", "-m", "adapters.reference",',
                            f'argv = ["{fake}", "{{bundle}}", "--worker-binary", "{tmp_path / "no-worker"}",')
        text = text.replace('[server]\n', f'[server]\nbundle = "{tmp_path}"\n', 1)
        cfg_path = tmp_path / "bench.toml"
        cfg_path.write_text(text)
        checks = {c.name: c for c in run_checks(load_config(cfg_path))}
        bundle = next(c for name, c in checks.items() if name.startswith("bundle"))
        assert not bundle.ok and bundle.required and "is a directory; trtmc-server takes a .bundle file" in bundle.detail
        worker = checks["server --worker-binary"]
        assert not worker.ok and worker.required and "does not exist" in worker.detail
        flags = checks["server flags"]
        assert flags.warning and "exited 1 without printing its help: ModuleNotFoundError: No module named " \
            "trtmc_server" in flags.detail and "does not list" not in flags.detail
