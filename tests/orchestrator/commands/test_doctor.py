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

    def test_module_launcher_runs_the_modules_help_and_keeps_a_hidden_flag(
            self, tmp_path: Path, capsys) -> None:
        """`python -P -m trtmc_server ...`: doctor runs `python -P -m trtmc_server --help` (not python's
        own), and a flag that help hides (trtmc-server's --worker-binary, which it needs) is named as kept,
        never advised away; doctor exits 0."""
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
        assert check.ok and "--worker-binary: hidden from --help by this server kind and needed by it, keep" \
            in check.detail
        assert "it lists --host, --model-name, --port, --records, --replicas;" in check.detail
        capsys.readouterr()
        assert main(["doctor", "--config", str(cfg_path)]) == 0
        out = capsys.readouterr().out
        assert "ok   server flags:" in out and "drop it" not in out
        assert f"ok   server --worker-binary: {worker} is a file" in out

    def test_what_trtmc_server_would_reject_fails(self, tmp_path: Path) -> None:
        """A directory as trtmc-server's bundle and a --worker-binary that does not exist fail, each with a
        fix; a --help that shows the server cannot start (module not found) FAILs with its last line, not as
        every flag missing."""
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
        assert not flags.ok and flags.required and "with no [server] env exited 1: ModuleNotFoundError: No module " \
            "named trtmc_server; the server cannot start" in flags.detail and "does not list" not in flags.detail
        assert "PYTHONPATH" in flags.fix


TRTMC_LIB = ROOT / "tests" / "data" / "doctor" / "trtmc_lib"  # holds the stand-in trtmc_server package


def _trtmc_config(tmp_path: Path, launcher: list[str], args: list[str], *, env: dict[str, str] | None = None,
                  server_args: list[str] | None = None) -> Path:
    """bench.toml for a trtmc-server started as `launcher ... {bundle} args`, with a real bundle file."""
    bundle = tmp_path / "m.bundle"
    bundle.write_text("")
    text = (ROOT / "bench.toml").read_text().replace('kind = "reference"', 'kind = "trtmc-server"')
    argv = ", ".join(f'"{a}"' for a in [*launcher, "{bundle}", *args])
    text = text.replace('argv = ["{python}", "-m", "adapters.reference", "--host", "{host}", "--port", "{port}",\n'
                        '        "--model-name", "{model}", "--records", "{records}", "--replicas", "{replicas}"]',
                        f'argv = [{argv}, "--host", "{{host}}", "--port", "{{port}}", "--model-name", "{{model}}", '
                        '"--records", "{records}", "--replicas", "{replicas}"]')
    envs = ", ".join(f'{k} = "{v}"' for k, v in (env or {}).items())
    text = text.replace("[server]\n", f"[server]\nbundle = \"{bundle}\"\nenv = {{ {envs} }}\n", 1)
    if server_args is not None:
        text = text.replace('native_task = "audio_text_to_text"\n', 'native_task = "audio_text_to_text"\n'
                            f'server_args = [{", ".join(chr(34) + a + chr(34) for a in server_args)}]\n', 1)
    path = tmp_path / "bench.toml"
    path.write_text(text)
    assert f"[{argv}," in text  # the shipped argv line was found and replaced
    return path


def _worker(tmp_path: Path) -> Path:
    worker = tmp_path / "worker"
    worker.write_text("#!/bin/sh\n")
    worker.chmod(0o755)
    return worker


class TestDoctorChecksWhatTheServerChecks:
    def test_module_launcher_found_through_server_env(self, tmp_path: Path, capsys) -> None:
        """`{python} -m trtmc_server`, the module reachable only through [server] env PYTHONPATH: no false
        FAIL, the module's own --help checks the flags, --worker-binary is kept (never advised away), exit 0."""
        from orchestrator.cli import main

        cfg = _trtmc_config(tmp_path, ["{python}", "-m", "trtmc_server"], ["--worker-binary", str(_worker(tmp_path))],
                            env={"PYTHONPATH": str(TRTMC_LIB)})
        checks = {c.name: c for c in run_checks(load_config(cfg))}
        assert checks["server"].ok and checks["server"].detail.endswith(
            f"-m trtmc_server (module found with [server] env PYTHONPATH={TRTMC_LIB})"), checks["server"]
        flags = checks["server flags"]
        assert flags.ok and "-m trtmc_server --help`" in flags.detail, flags
        assert "--worker-binary: hidden from --help by this server kind and needed by it, keep" in flags.detail
        capsys.readouterr()
        assert main(["doctor", "--config", str(cfg)]) == 0
        out = capsys.readouterr().out
        assert "ok   server flags:" in out and "drop it" not in out

    def test_isolated_module_launcher_reads_the_module_name(self, tmp_path: Path) -> None:
        """`{python} -P -m trtmc_server`: the module name is read after -P and the flags are checked against
        `python -P -m trtmc_server --help`."""
        import sys

        cfg = _trtmc_config(tmp_path, ["{python}", "-P", "-m", "trtmc_server"],
                            ["--worker-binary", str(_worker(tmp_path))], env={"PYTHONPATH": str(TRTMC_LIB)})
        checks = {c.name: c for c in run_checks(load_config(cfg))}
        assert checks["server"].ok and f"{sys.executable} -P -m trtmc_server (module found" in checks["server"].detail
        assert f"`{sys.executable} -P -m trtmc_server --help`" in checks["server flags"].detail
        assert checks["server flags"].ok, checks["server flags"]

    def test_missing_or_wrong_env_fails_and_exits_1(self, tmp_path: Path, capsys) -> None:
        """A Python launcher whose module only [server] env can reach: without that env, or with a wrong
        PYTHONPATH, the server check FAILs with the fix, and doctor exits 1."""
        import sys

        from orchestrator.cli import main

        worker = str(_worker(tmp_path))
        for env in ({}, {"PYTHONPATH": str(tmp_path / "nowhere")}):
            cfg = _trtmc_config(tmp_path, [sys.executable, "-P", "-m", "trtmc_server"], ["--worker-binary", worker],
                                env=env)
            server = next(c for c in run_checks(load_config(cfg)) if c.name == "server")
            assert not server.ok and server.required, server
            assert "module trtmc_server not importable with " + ("no [server] env" if not env else
                                                                 f"[server] env PYTHONPATH={tmp_path / 'nowhere'}") \
                in server.detail
            assert "set PYTHONPATH in [server] env to the folder holding trtmc_server/" in server.fix
            capsys.readouterr()
            assert main(["doctor", "--config", str(cfg)]) == 1
            assert "FAIL server:" in capsys.readouterr().out

    def test_worker_binary_forms_anywhere_and_directories(self, tmp_path: Path) -> None:
        """`--worker-binary=DIR` as the last argv element and `--worker-binary DIR` in [[models]] server_args
        are both checked, and a directory FAILs (it is no worker executable)."""
        folder = tmp_path / "worker-dir"
        folder.mkdir()
        cfg = _trtmc_config(tmp_path, ["{python}", "-m", "trtmc_server"], [], env={"PYTHONPATH": str(TRTMC_LIB)},
                            server_args=["--startup-timeout", "30", "--worker-binary", str(folder)])
        text = cfg.read_text().replace('"--replicas", "{replicas}"]', f'"--replicas", "{{replicas}}", '
                                                                      f'"--worker-binary={folder}"]', 1)
        cfg.write_text(text)
        checks = {c.name: c for c in run_checks(load_config(cfg))}
        last = checks["server --worker-binary"]
        assert not last.ok and last.required and last.detail == f"{folder} is a directory; --worker-binary takes a file"
        model = checks["server --worker-binary (reference-audioqa)"]
        assert not model.ok and "[[models]] reference-audioqa server_args" in model.fix
        assert "--startup-timeout" in checks["server flags"].detail  # server_args' flags are checked too

    def test_worker_binary_without_value_fails(self, tmp_path: Path) -> None:
        """`--worker-binary` as argv's last element, with no value after it, FAILs instead of going unread."""
        cfg = _trtmc_config(tmp_path, ["{python}", "-m", "trtmc_server"], [], env={"PYTHONPATH": str(TRTMC_LIB)})
        cfg.write_text(cfg.read_text().replace('"--replicas", "{replicas}"]', '"--replicas", "{replicas}", '
                                                                              '"--worker-binary"]', 1))
        check = next(c for c in run_checks(load_config(cfg)) if c.name == "server --worker-binary")
        assert not check.ok and check.detail == "--worker-binary has no value in [server] argv"
