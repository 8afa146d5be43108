"""Read TRTMC model manifests from a checkout folder or from a git revision; records what was read.

Finds files only (both layouts); what they mean is the job of `manifests` and `audit`. Blocks (file reads, git).
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

import msgspec

from orchestrator.errors import InventoryError
from orchestrator.inventory.records import LAYOUTS, CodeSources, ManifestDocument, SourceDocument, TreeSource

__all__ = ["MANIFEST_GLOBS", "SUPPORT_MATRIX", "read_tree", "read_task_sources", "read_code_sources"]

# Older and newer layouts (shared/docs/trtmc.md section 3); both may exist in one checkout.
MANIFEST_GLOBS: dict[str, str] = {
    "tests/e2e/models": "tests/e2e/models/*/manifests/*.json",
    "families": "families/*/tests/manifests/*.json",
}
_GIT_TIMEOUT_S = 60.0
# Where a family declares and binds its native Tasks when no manifest shows them (Gemma 4's Edge-LLM
# audio_text_to_text): its support.py, its runtime sources, and its READMEs naming checkpoints.
_RUNTIME_SUFFIXES = (".cpp", ".cc", ".h", ".hpp")
_MAX_SOURCE_BYTES = 2 << 20
# The owners' published status table (website source data).
SUPPORT_MATRIX = "website/data/model-support-matrix.md"
# Where an omitted manifest `precision` gets its value: the e2e harness and the build CLI.
_PRECISION_DEFAULT_FILES = ("tests/e2e_harness/orchestrator.py",)
_RUNTIME_CODE_NAMES = ("plugin.cpp", "pipeline.h")


def _task_source_family(path: str) -> str | None:
    """The family folder when `path` is a Task-declaration source (tests excluded), else None."""
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] != "families" or "tests" in parts[2:]:
        return None
    name = parts[-1]
    if (len(parts) == 3 and name == "support.py") or name == "README.md":
        return parts[1]
    if parts[2] == "runtime" and name.endswith(_RUNTIME_SUFFIXES):
        return parts[1]
    return None


def _code_kind(path: str) -> tuple[str, str] | None:
    """("precision" | "family" | "matrix", family folder or "") for a file `read_code_sources` wants."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if path == SUPPORT_MATRIX:
        return "matrix", ""
    if path in _PRECISION_DEFAULT_FILES or (len(parts) == 3 and parts[0] == "python" and name == "build_cli.py"):
        return "precision", ""
    # A family's build plugin: python/<package>/families/<fam>/plugin.py (or families/<fam>/plugin.py).
    if name == "plugin.py" and len(parts) >= 3 and parts[-3] == "families" and (
            len(parts) == 3 or (len(parts) == 5 and parts[0] == "python")):
        return "family", parts[-2]
    # Its C++ runtime: src/runtime/models/<fam>/{plugin.cpp, pipeline.h, *_plan.h}.
    if len(parts) == 5 and parts[:3] == ("src", "runtime", "models") and (
            name in _RUNTIME_CODE_NAMES or name.endswith("_plan.h")):
        return "family", parts[3]
    return None


def _classify_path(path: str) -> tuple[str, str] | None:
    """(layout, family folder) when `path` is a manifest in one of the layouts, else None."""
    parts = PurePosixPath(path).parts
    if not path.endswith(".json"):
        return None
    if len(parts) == 6 and parts[:3] == ("tests", "e2e", "models") and parts[4] == "manifests":
        return "tests/e2e/models", parts[3]
    if len(parts) == 5 and parts[0] == "families" and parts[2:4] == ("tests", "manifests"):
        return "families", parts[1]
    return None


def _git(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True,
                              timeout=_GIT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise InventoryError("git is not installed; --rev needs git (or audit the folder without --rev)") from None
    except subprocess.TimeoutExpired:
        raise InventoryError(f"{root}: git {args[0]} took longer than {_GIT_TIMEOUT_S:.0f} s") from None


def _head(root: Path) -> tuple[str, bool | None]:
    """HEAD commit and whether manifests differ from it, for a folder that is a git checkout."""
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    if head.returncode != 0:
        return "", None
    status = _git(root, "status", "--porcelain", "--", *MANIFEST_GLOBS.values())
    dirty = None if status.returncode != 0 else bool(status.stdout.strip())
    return head.stdout.decode().strip(), dirty


def _read_folder(root: Path) -> tuple[list[ManifestDocument], TreeSource]:
    docs: list[ManifestDocument] = []
    for layout in LAYOUTS:
        for file in sorted(root.glob(MANIFEST_GLOBS[layout])):
            rel = file.relative_to(root).as_posix()
            found = _classify_path(rel)
            if found is None or not file.is_file():
                continue
            try:
                data = file.read_bytes()
            except OSError as exc:
                # An unreadable manifest still becomes an error row: its bytes are not JSON.
                data = f"<unreadable: {exc.strerror}>".encode()
            docs.append(ManifestDocument(path=rel, layout=found[0], family_dir=found[1], data=data))  # type: ignore[arg-type]
    commit, dirty = _head(root)
    return docs, TreeSource(root=str(root), commit=commit, dirty=dirty, read_via="folder")


def _read_rev(root: Path, rev: str) -> tuple[list[ManifestDocument], TreeSource]:
    resolved = _git(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
    if resolved.returncode != 0:
        inside = _git(root, "rev-parse", "--git-dir").returncode == 0
        if not inside:
            raise InventoryError(f"{root}: not a git repository; --rev {rev} needs one (or drop --rev)")
        raise InventoryError(f"{root}: revision {rev!r} does not name a commit; try a branch, tag or sha")
    commit = resolved.stdout.decode().strip()
    listing = _git(root, "ls-tree", "-r", "-z", "--name-only", commit, "--", "tests/e2e/models", "families")
    if listing.returncode != 0:
        raise InventoryError(f"{root}: git ls-tree {commit} failed: {listing.stderr.decode().strip()}")
    wanted = [(p, found) for p in listing.stdout.decode().split("\0") if p and (found := _classify_path(p))]
    # One `git cat-file --batch` process reads every blob: the same objects as `git show REV:PATH`,
    # without one process per manifest (a TRTMC checkout has hundreds).
    blobs = _cat_files(root, commit, [p for p, _ in wanted])
    docs = [ManifestDocument(path=path, layout=layout, family_dir=family, data=data)  # type: ignore[arg-type]
            for (path, (layout, family)), data in zip(wanted, blobs, strict=True)]
    return docs, TreeSource(root=str(root), rev=rev, commit=commit, read_via="git")


def _cat_files(root: Path, commit: str, paths: list[str]) -> list[bytes]:
    """The blobs of `paths` at `commit`, through one `git cat-file --batch` process."""
    if not paths:
        return []
    request = "".join(f"{commit}:{p}\n" for p in paths).encode()
    batch = _git(root, "cat-file", "--batch", stdin=request)
    if batch.returncode != 0:
        raise InventoryError(f"{root}: git cat-file at {commit} failed: {batch.stderr.decode().strip()}")
    out, pos, blobs = batch.stdout, 0, []
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) != 3:
            raise InventoryError(f"{root}: git could not read {commit}:{path}: {out[pos:end].decode()}")
        size = int(header[2])
        blobs.append(out[end + 1:end + 1 + size])
        pos = end + 1 + size + 1
    return blobs


def read_task_sources(source: TreeSource) -> list[SourceDocument]:
    """The families' Task-declaration sources (support.py, runtime C++, READMEs; tests excluded) from the
    same place and revision `read_tree` read the manifests. Files over 2 MiB are skipped. Blocks."""
    root = Path(source.root)
    if source.read_via == "git":
        listing = _git(root, "ls-tree", "-r", "-z", "-l", source.commit, "--", "families")
        if listing.returncode != 0:
            raise InventoryError(f"{root}: git ls-tree {source.commit} failed: {listing.stderr.decode().strip()}")
        wanted: list[tuple[str, str]] = []
        for entry in listing.stdout.decode().split("\0"):
            meta, _, path = entry.partition("\t")
            size = meta.split()[-1] if meta else "-"
            family = _task_source_family(path) if path else None
            if family and size.isdigit() and int(size) <= _MAX_SOURCE_BYTES:
                wanted.append((path, family))
        blobs = _cat_files(root, source.commit, [p for p, _ in wanted])
        return [SourceDocument(path=p, family_dir=f, data=d) for (p, f), d in zip(wanted, blobs, strict=True)]
    out: list[SourceDocument] = []
    families = root / "families"
    for file in sorted(families.rglob("*")) if families.is_dir() else []:
        rel = file.relative_to(root).as_posix()
        family = _task_source_family(rel)
        if family is None or not file.is_file():
            continue
        try:
            if file.stat().st_size > _MAX_SOURCE_BYTES:
                continue
            out.append(SourceDocument(path=rel, family_dir=family, data=file.read_bytes()))
        except OSError:
            continue  # an unreadable source only costs evidence; manifests stay the inventory's basis
    return out


def read_code_sources(source: TreeSource) -> CodeSources:
    """The precision-default files, families' build plugins and runtimes, and the support matrix, from the
    same place and revision `read_tree` read the manifests. Files over 2 MiB are skipped. Blocks."""
    root = Path(source.root)
    found: list[tuple[str, str, str]] = []  # (path, kind, family)
    if source.read_via == "git":
        listing = _git(root, "ls-tree", "-r", "-z", "-l", source.commit)
        if listing.returncode != 0:
            raise InventoryError(f"{root}: git ls-tree {source.commit} failed: {listing.stderr.decode().strip()}")
        for entry in listing.stdout.decode().split("\0"):
            meta, _, path = entry.partition("\t")
            size = meta.split()[-1] if meta else "-"
            kind = _code_kind(path) if path else None
            if kind and size.isdigit() and int(size) <= _MAX_SOURCE_BYTES:
                found.append((path, *kind))
        blobs = _cat_files(root, source.commit, [p for p, _, _ in found])
    else:
        globs = (SUPPORT_MATRIX, *_PRECISION_DEFAULT_FILES, "python/*/build_cli.py", "families/*/plugin.py",
                 "python/*/families/*/plugin.py", "src/runtime/models/*/*")
        files = sorted({f for g in globs for f in root.glob(g) if f.is_file()})
        blobs = []
        for file in files:
            rel = file.relative_to(root).as_posix()
            kind = _code_kind(rel)
            try:
                if kind is None or file.stat().st_size > _MAX_SOURCE_BYTES:
                    continue
                blobs.append(file.read_bytes())
            except OSError:
                continue  # an unreadable source only costs a citation
            found.append((rel, *kind))
    docs = [(kind, SourceDocument(path=p, family_dir=fam, data=d)) for (p, kind, fam), d in zip(found, blobs, strict=True)]
    matrix = next((d for kind, d in docs if kind == "matrix"), None)
    return CodeSources(precision_defaults=[d for kind, d in docs if kind == "precision"],
                       family_code=[d for kind, d in docs if kind == "family"], support_matrix=matrix)


def _is_bare(root: Path) -> bool:
    try:
        probe = _git(root, "rev-parse", "--is-bare-repository")
    except InventoryError:
        return False  # without git a bare repository cannot be read anyway; the caller says "no manifests"
    return probe.returncode == 0 and probe.stdout.decode().strip() == "true"


def read_tree(root: str | Path, rev: str = "") -> tuple[list[ManifestDocument], TreeSource]:
    """Every manifest of a TRTMC checkout in both layouts: from the folder, or at `rev` through git.
    A bare repository (no working tree) given without `rev` is read at its HEAD, and the source says so.

    Raises InventoryError when the folder is missing, the revision is unknown, or neither layout holds
    a manifest (most likely the wrong path). Blocks: file reads or two or three git processes.
    """
    path = Path(root).expanduser()
    if not path.is_dir():
        raise InventoryError(f"{path}: no such folder; pass --trtmc PATH to a TensorRT-Model-Connect checkout")
    docs, source = _read_rev(path.resolve(), rev) if rev else _read_folder(path.resolve())
    if not docs and not rev and _is_bare(path.resolve()):
        # A bare repository has no working tree to read: its HEAD is what it holds.
        docs, source = _read_rev(path.resolve(), "HEAD")
        source = msgspec.structs.replace(source, bare=True)
    if not docs:
        at = f" at {source.commit[:12]}" if source.read_via == "git" else ""
        raise InventoryError(
            f"{path}{at}: no model manifests in either layout ({', '.join(MANIFEST_GLOBS.values())}); "
            "is this a TensorRT-Model-Connect checkout?"
        )
    return docs, source
