"""Packaging: the wheel ships both datasets without a top-level `datasets` package and the report templates,
and both an editable install and a built wheel find the shipped data (audioqa-v2 by default)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = (
    "import orchestrator, datasets, json;"
    "from orchestrator.config import DatasetConfig;"
    "from orchestrator.dataset import resolve_dataset_path, load_dataset;"
    "p = resolve_dataset_path(DatasetConfig()); ds = load_dataset(p);"
    "print(json.dumps({'pkg': orchestrator.__file__, 'data': str(p), 'items': len(ds.items),"
    " 'hf_datasets': datasets.__file__}))"
)


def probe(env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:
    import json

    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                         env=env, cwd=cwd)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_editable_install_finds_repo_dataset(tmp_path: Path) -> None:
    """From any folder, the editable install resolves the dataset inside this checkout and Hugging Face
    `datasets` stays the real package."""
    got = probe(cwd=tmp_path)
    assert Path(got["data"]) == ROOT / "datasets" / "audioqa-v2" and got["items"] >= 400
    assert "site-packages" in got["hf_datasets"]


@pytest.mark.slow
def test_wheel_ships_dataset_as_package_data(tmp_path: Path) -> None:
    """A wheel built from the tree carries the clips under aqbench_datasets/, no `datasets/` package, and
    installed on its own finds the data inside the install, not in the checkout."""
    wheel_dir = tmp_path / "wheel"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheel_dir), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheel_dir.glob("aqbench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for name, clips in (("audioqa-v1", 46), ("audioqa-v2", 370)):  # both shipped sets, every clip
        assert f"aqbench_datasets/{name}/manifest.jsonl" in names and f"aqbench_datasets/{name}/README.md" in names
        assert sum(n.startswith(f"aqbench_datasets/{name}/audio/") for n in names) >= clips
    assert not any(n.startswith("datasets/") for n in names)
    # The HTML reports' templates are package data: without them every report.html render fails.
    templates = ROOT / "orchestrator" / "reports" / "templates"
    assert {f"orchestrator/reports/templates/{p.name}" for p in templates.glob("*.html")} <= set(names)
    assert sum(n.startswith("orchestrator/reports/templates/") for n in names) >= 4
    # The live page's script and style sheet (no CDN: served from the package).
    assert {f"orchestrator/live/static/page.{ext}" for ext in ("html", "js", "css")} <= set(names)
    site = tmp_path / "site"
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                           "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(site)}
    got = probe(env=env, cwd=tmp_path)
    assert got["pkg"].startswith(str(site)) and got["data"].startswith(str(site)), got
    assert got["items"] >= 400 and "site-packages" in got["hf_datasets"]
