"""bench.toml loading: the default file is valid, and every kind of bad input is named precisely."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.base.errors import ConfigError
from orchestrator.config import load_config, parse_duration

ROOT = Path(__file__).resolve().parents[3]
DEFAULT = (ROOT / "bench.toml").read_text()


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bench.toml"
    p.write_text(text)
    return p


class TestLoadConfig:
    def test_default_config_is_valid_and_resolves_relative_paths(self, tmp_path: Path) -> None:
        """The shipped bench.toml loads, and relative paths resolve against the file's folder."""
        cfg = load_config(write(tmp_path, DEFAULT))
        assert cfg.run.output_dir == str(tmp_path / "runs")
        assert cfg.models[0].name == "reference-audioqa"
        assert cfg.server.port is None and cfg.workload.concurrency == 2
        assert len(cfg.sha256) == 64

    def test_default_config_judges_the_audio_arm_of_audioqa_v2_at_the_owners_margins(self, tmp_path: Path) -> None:
        """The default: audioqa-v2, its silence and transcript arms on a subset, and non-inferiority over the
        audio arm at the owners' right/wrong margins unchanged (1 point, 2 quantized), the int8 model against
        its float32 self; a per-model server_args list defaults to none."""
        cfg = load_config(write(tmp_path, DEFAULT))
        assert (cfg.dataset.name, cfg.dataset.arms, cfg.dataset.conditioning_items) == \
            ("audioqa-v2", ["audio", "silence", "transcript"], 48)
        model = cfg.models[0]
        ni = model.correctness.noninferiority
        assert ni is not None and (ni.margin, ni.arms) == (1.0, ["audio"])
        assert ni.quantized_gate is not None and ni.quantized_gate.margin == 2.0
        assert model.precision == "int8" and model.reference is not None and model.reference.precision == "float32"
        assert model.server_args == []

    @pytest.mark.parametrize(
        ("old", "new", "message"),
        [
            ('host = "127.0.0.1"', 'host = "127.0.0.1"\nport = 0', r"bench\.toml: server\.port: expected int >= 1"),
            ('host = "127.0.0.1"', 'host = "127.0.0.1"\nprot = 80', r"server: unknown key prot \(line \d+\): did you mean `port`\?"),
            ('requests = 48', 'requests = -3', r"workload\.requests: expected int >= 1"),
            ('requests = 48', 'requests = "many"', r"workload\.requests: expected int, got str"),
            ('name = "reference-audioqa"\n', '', r"models\[0\]: missing required key name"),
            ('min_pass_rate = 0.9', 'min_pass_rate = 1.5', r"models\[0\]\.correctness\.min_pass_rate: expected float <= 1"),
            ('host = "127.0.0.1"', 'host = "10.0.0.5"', r"server\.host: '10\.0\.0\.5' is not a loopback address"),
            ('"{python}", "-m"', '"{pyton}", "-m"', r"server\.argv\[0\]: unknown placeholder \{pyton\}; allowed: \{python\}"),
            ('concurrency = 2\nstreaming', 'concurrency = 2\nrequest_rate = 3.0\nstreaming', r"workload: set exactly one of concurrency and request_rate"),
            ('policy = "on-failure"', 'policy = "always"', r"server\.restart\.policy: invalid enum value 'always'; expected one of 'never', 'on-failure'"),
            ('arms = ["audio"]\ndeadline_s', 'arms = ["audio", "video"]\ndeadline_s', r"workload\.arms\[1\]: invalid enum value 'video'; expected one of 'audio', 'silence', 'transcript'"),
        ],
    )
    def test_bad_values_name_file_key_and_expectation(self, tmp_path: Path, old: str, new: str, message: str) -> None:
        """A bad value is a ConfigError naming the file, the key path and what was expected."""
        assert old in DEFAULT
        path = write(tmp_path, DEFAULT.replace(old, new, 1))
        with pytest.raises(ConfigError, match=str(path).replace(".", r"\.") + ": " + message.split(": ", 1)[-1]
                           if message.startswith("bench") else message):
            load_config(path)

    def test_request_rate_alone_is_an_open_loop(self, tmp_path: Path) -> None:
        """`request_rate` without `concurrency` is an open loop: the default concurrency gives way, since
        TOML cannot write it unset (before, this file was refused as setting both)."""
        cfg = load_config(write(tmp_path, DEFAULT.replace("concurrency = 2\nstreaming", "request_rate = 3.0\nstreaming", 1)))
        assert (cfg.workload.concurrency, cfg.workload.request_rate) == (None, 3.0)

    def test_missing_file_and_bad_toml(self, tmp_path: Path) -> None:
        """A missing file and a TOML syntax error are clear errors, not tracebacks."""
        with pytest.raises(ConfigError, match="no such configuration file"):
            load_config(tmp_path / "nope.toml")
        with pytest.raises(ConfigError, match="not valid TOML"):
            load_config(write(tmp_path, "[run\nname='x'"))

    def test_duplicate_model_names_rejected(self, tmp_path: Path) -> None:
        """Two [[models]] with one name are refused, naming the second."""
        block = DEFAULT[DEFAULT.index("[[models]]"): DEFAULT.index("[dataset]")]
        with pytest.raises(ConfigError, match=r"models\[1\]\.name: duplicate model name 'reference-audioqa'"):
            load_config(write(tmp_path, DEFAULT.replace("[dataset]", block + "[dataset]", 1)))


def test_parse_duration() -> None:
    """Durations accept s/m/h/ms suffixes and reject nonsense with the key named."""
    assert parse_duration("8h") == 28800 and parse_duration("5m") == 300 and parse_duration("250ms") == 0.25
    with pytest.raises(ConfigError, match="--duration: 'soon' is not a positive duration"):
        parse_duration("soon", what="--duration")


class TestConfigCheckCommand:
    def test_prints_resolved_configuration(self) -> None:
        """`aqbench config check` validates the default file and prints it resolved."""
        out = subprocess.run([sys.executable, "-m", "orchestrator", "config", "check", str(ROOT / "bench.toml")],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "is valid" in out.stdout and f'output_dir = "{ROOT / "runs"}"' in out.stdout

    def test_bad_file_exits_2_with_message(self, tmp_path: Path) -> None:
        """An invalid file exits 2 and names the key on stderr."""
        path = write(tmp_path, DEFAULT.replace("replicas = 2", "replicas = 0"))
        out = subprocess.run([sys.executable, "-m", "orchestrator", "config", "check", str(path)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2
        assert "server.replicas: expected int >= 1" in out.stderr

    def test_config_flag_as_in_the_other_commands(self, tmp_path: Path) -> None:
        """`--config PATH` works as PATH does; two different files are a usage error."""
        path = write(tmp_path, DEFAULT.replace("replicas = 2", "replicas = 0"))
        out = subprocess.run([sys.executable, "-m", "orchestrator", "config", "check", "--config", str(path)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and f"{path}: server.replicas: expected int >= 1" in out.stderr
        out = subprocess.run([sys.executable, "-m", "orchestrator", "config", "check", str(ROOT / "bench.toml"),
                              "--config", str(path)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "two files given" in out.stderr

    def test_missing_dataset_path_is_refused_naming_key_and_file(self, tmp_path: Path) -> None:
        """A `[dataset] path` that does not exist exits 2 naming the key and the folder, before any run."""
        path = write(tmp_path, DEFAULT.replace("[dataset]\n", '[dataset]\npath = "no-such-dataset"\n', 1))
        out = subprocess.run([sys.executable, "-m", "orchestrator", "config", "check", str(path)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, out.stdout
        assert f"{path}: dataset.path: 'no-such-dataset' ({tmp_path / 'no-such-dataset'}) does not exist" in out.stderr

    def test_prints_the_resolved_dataset_folder(self) -> None:
        """With only `[dataset] name` set, config check prints the folder a run will read, not `path = ""`."""
        out = subprocess.run([sys.executable, "-m", "orchestrator", "config", "check", str(ROOT / "bench.toml")],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        from orchestrator.dataset import resolve_dataset_path

        folder = resolve_dataset_path(load_config(ROOT / "bench.toml").dataset).resolve()
        assert 'path = ""' not in out.stdout and (folder / "manifest.jsonl").is_file()
        assert f'path = "{folder}"' in out.stdout
