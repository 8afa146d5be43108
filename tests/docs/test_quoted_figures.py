"""Figures the docs and bench.toml's comments quote come from the code or from bench/RESULTS.md, so they cannot
go stale: audioqa-v2's item count and the README's time for the main command (the zero-discordance sizes are
held where they are computed, tests/orchestrator/judge/test_noninferiority.py)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

from orchestrator.config import load_config

ROOT = Path(__file__).resolve().parents[2]
# The rounding bench/qualify_time.py prints its figure with (read from the script, which is no package).
quoted_minutes = runpy.run_path(str(ROOT / "bench" / "qualify_time.py"))["quoted_minutes"]


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _audio_problems() -> int:
    """audioqa-v2's items, one manifest line each (every item is an audio problem)."""
    return sum(1 for line in _text("datasets/audioqa-v2/manifest.jsonl").splitlines() if line.strip())


def test_audioqa_v2_item_count_where_quoted() -> None:
    """bench.toml's comment, docs/qualify.md, docs/soak.md and docs/datasets.md quote the manifest's count."""
    n = _audio_problems()
    assert f"audioqa-v2 has {n} audio problems" in _text("bench.toml")
    assert f"at {n} pairs and 2 points" in _text("bench.toml")
    qualify = _text("docs/qualify.md")
    assert f"over the {n} audio problems" in qualify and f"At {n} pairs" in qualify
    assert f"({n} audio, " in qualify and f"| reference | {n}: " in qualify
    assert f"audioqa-v2's {n} audio requests" in _text("docs/soak.md")
    assert f"| `audioqa-v2` (default) | {n} |" in _text("docs/datasets.md")


def test_conditioning_items_where_quoted() -> None:
    """The silence and transcript arms' item count that bench.toml's comment and docs/qualify.md quote is the
    configured one, and audioqa-v1's item count is its manifest's."""
    config = load_config(ROOT / "bench.toml")
    n, audio = config.dataset.conditioning_items, _audio_problems()
    assert f"run on {n} items each" in _text("bench.toml")
    assert f"{audio + 2 * n} over HTTP ({audio} audio, {n} silence, {n} transcript)" in _text("docs/qualify.md")
    v1 = sum(1 for line in _text("datasets/audioqa-v1/manifest.jsonl").splitlines() if line.strip())
    assert f"audioqa-v1 ({v1} items)" in _text("bench.toml")


def test_readme_time_is_the_recorded_one() -> None:
    """The README's and docs/qualify.md's time for the main command is the last bench/qualify_time.py run that
    bench/RESULTS.md records (its slowest run), said as bench/qualify_time.py says it."""
    results = _text("bench/RESULTS.md")
    section = results[results.rindex("## bench/qualify_time.py"):]
    section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
    walls = [float(w) for w in re.findall(r"^\| run \d+ [^|]*\| ([\d.]+) s \|", section, re.M)]
    assert walls, "no run recorded in bench/RESULTS.md's bench/qualify_time.py section"
    quoted = quoted_minutes(max(walls))
    assert f"; {quoted} on 2 shared cores" in _text("README.md")
    assert f"in {quoted} on 2 shared cores" in _text("docs/qualify.md")
