"""An unknown bench.toml key names the closest known key and its line in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.base.errors import ConfigError
from orchestrator.config import load_config
from orchestrator.config.misspelt import closest, key_line

SHIPPED = Path(__file__).resolve().parents[3] / "bench.toml"


class TestMisspeltKey:
    def test_replicas_misspelt_in_the_shipped_config(self, tmp_path: Path):
        """`replcias` under [server] of the shipped bench.toml: 'did you mean `replicas`?' with its line."""
        lines = SHIPPED.read_text(encoding="utf-8").splitlines()
        at = next(i for i, line in enumerate(lines) if line.strip() == "[server]") + 1
        lines.insert(at, "replcias = 2")
        path = tmp_path / "bench.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"server: unknown key replcias \(line {at + 1}\): did you mean `replicas`\?"):
            load_config(path)

    def test_nothing_close_says_remove_or_fix(self, tmp_path: Path):
        """A key like no known one keeps the plain advice, still with its line."""
        path = tmp_path / "bench.toml"
        path.write_text("# a comment\nzzzz = 1\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=r"\(top level\): unknown key zzzz \(line 2\): remove it or fix its spelling"):
            load_config(path)


class TestKeyLine:
    TEXT = ('top = 1\n[server]\nkind = "reference"\n\n[[models]]\nname = "a"\n[models.correctness]\nmin = 1\n'
            '[[models]]\nname = "b"\nserver.port = 3\n"quoted" = 2\n')

    @pytest.mark.parametrize("key, line", [("top", 1), ("server", 2), ("server.kind", 3), ("models[0]", 5),
                                           ("models[0].name", 6), ("models[0].correctness.min", 8),
                                           ("models[1].name", 10), ("models[1].server.port", 11),
                                           ("models[1].quoted", 12), ("models[2].name", None)])
    def test_finds_the_line(self, key: str, line: int | None):
        """Tables, arrays of tables by index, sub-tables of an array's entry, dotted and quoted keys."""
        assert key_line(self.TEXT, key) == line

    def test_closest(self):
        """The closest known spelling, or none when nothing is near."""
        assert closest("replcias", ["replicas", "port", "host"]) == "replicas"
        assert closest("zzzz", ["replicas", "port"]) is None
