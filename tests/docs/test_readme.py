"""The README a newcomer reads in five minutes: short, the two commands CI runs, and a map whose every
link (and every link in docs/) leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAIN_JOB = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/aqbench qualify"
TESTS = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/pytest -n 2 --dist loadgroup"
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_readme_is_short() -> None:
    """At most 150 lines: what aqbench does, the two commands, what a run writes, and the map of docs/."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_the_two_commands_are_the_ones_ci_and_a_newcomer_run() -> None:
    """The README's two commands are exactly the main job and the test command, and `.ci/run` runs the
    second word for word."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The two commands"):text.index("\n## ", text.index("## The two commands") + 1)]
    assert re.findall(r"```sh\n(.*?)\n```", section, re.S) == [MAIN_JOB, TESTS]
    assert TESTS in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_every_docs_page_is_on_the_readme_map() -> None:
    """Each docs/*.md page is linked from the README, so the map never leaves a page out."""
    linked = {Path(m.group(1).split("#")[0]).as_posix() for m in _LINK.finditer(README.read_text(encoding="utf-8"))}
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert pages and pages <= linked, f"not on the README's map: {sorted(pages - linked)}"


def test_every_relative_link_resolves() -> None:
    """Every relative link in the README and docs/ names a file that exists, and a heading of it."""
    broken = []
    for page in _pages():
        for m in _LINK.finditer(page.read_text(encoding="utf-8")):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
