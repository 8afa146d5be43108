"""The configuration reference: docs/configuration.md is what the Structs of orchestrator/config/ and docstrings render to."""

from __future__ import annotations

import inspect
import sys
import tomllib
from pathlib import Path

import msgspec
import pytest

from orchestrator.base.errors import ConfigError
from orchestrator.cli import main
from orchestrator.config.doc import DOC_PATH, doc_rows, render_doc

ROOT = Path(__file__).resolve().parents[3]


class _Inner(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """[outer.inner]: a nested table."""

    level: float = 0.5
    """How much."""


class _Outer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole file."""

    inner: _Inner = _Inner()


class _Undocumented(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    documented: int = 1
    """Has a meaning."""
    bare: int = 2


class _UndocumentedRoot(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    table: _Undocumented = _Undocumented()


class TestConfigReference:
    def test_docs_configuration_is_current(self) -> None:
        """docs/configuration.md equals what `aqbench config reference` renders from orchestrator/config/ now."""
        written = (ROOT / DOC_PATH).read_text(encoding="utf-8")
        assert written == render_doc(), (
            f"{DOC_PATH} is stale: run `.venv/bin/aqbench config reference --out {DOC_PATH}` "
            "and commit it")

    def test_every_key_of_every_table_is_listed(self) -> None:
        """Each key msgspec would accept in bench.toml has one row, under its table (reserved ones aside)."""
        keys = {f"{r.table}.{r.key}" for r in doc_rows()}
        assert {"run.output_dir", "server.restart.backoff_max_s", "models.correctness.noninferiority.quantized_gate.margin",
                "models.reference.request_timeout_s", "workload.request_rate", "campaign.bring_back_mib"} <= keys
        assert not any(k.endswith((".source", ".sha256")) and k.count(".") == 1 for k in keys)
        assert len(keys) == len(doc_rows())

    def test_defaults_are_written_as_toml_that_reads_back_as_the_default(self) -> None:
        """A rendered default, read as TOML, is the Struct's default value itself."""
        rows = [r for r in doc_rows() if r.value is not None]
        assert rows
        for row in rows:
            assert tomllib.loads(f"x = {row.default.strip('`')}")["x"] == row.value, row

    def test_a_key_without_a_docstring_is_refused_by_name(self) -> None:
        """A new key without its meaning under it fails the render, naming the class, the field and the fix."""
        source = inspect.getsource(sys.modules[__name__])
        with pytest.raises(ConfigError, match=r"_Undocumented\.bare \(\[table\] bare\) has no docstring: write its "
                                              r"meaning as a string on the line under the field"):
            render_doc(_UndocumentedRoot, source=source)

    def test_tables_render_with_their_docstring_type_default_and_meaning(self) -> None:
        """A nested table is a section with its docstring (less the `[name]:` lead) and one row per key."""
        text = render_doc(_Outer, source=inspect.getsource(sys.modules[__name__]))
        assert "## `[inner]`\n\nA nested table.\n\n| key | type | default | meaning |" in text
        assert "| `level` | number | `0.5` | How much. |" in text

    def test_cli_writes_the_reference(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`aqbench config reference --out FILE` writes the rendered reference; without --out it prints it."""
        out = tmp_path / "configuration.md"
        assert main(["config", "reference", "--out", str(out)]) == 0
        assert out.read_text(encoding="utf-8") == render_doc()
        capsys.readouterr()
        assert main(["config", "reference"]) == 0
        assert capsys.readouterr().out == render_doc()
