"""Read a TRTMC checkout's files from a folder or from a git revision: manifests, the families' own files, and
the checkout-wide files the audit cites; records what was read. Finds files only (both layouts; `paths` says
which path is what), never what they mean. Blocks (file reads, git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec

from orchestrator.base.errors import InventoryError
from orchestrator.inventory.paths import (
    MANIFEST_GLOBS,
    OWNER_MODELS_DIR,
    OWNER_TASKS,
    PRECISION_DEFAULT_FILES,
    QUALIFICATION_README,
    SERVER_SCHEMA,
    SUPPORT_MATRIX,
    checkout_file,
    family_file,
    manifest_path,
)
from orchestrator.inventory.records import LAYOUTS, CodeSources, ManifestDocument, SourceDocument, TreeSource

__all__ = ["MANIFEST_GLOBS", "SUPPORT_MATRIX", "open_checkout", "read_checkout_files", "read_tree", "read_task_sources",
           "read_code_sources"]

_GIT_TIMEOUT_S = 60.0
_MAX_SOURCE_BYTES = 2 << 20
# Folder globs for the checkout-wide files `read_code_sources` wants (a git read lists every path instead).
_CODE_GLOBS = (SUPPORT_MATRIX, SERVER_SCHEMA, OWNER_TASKS, f"{OWNER_MODELS_DIR}/*.yaml", f"{OWNER_MODELS_DIR}/*.yml",
               QUALIFICATION_README, *PRECISION_DEFAULT_FILES, "python/*/build_cli.py",
               "python/*/families/*/plugin.py", "src/runtime/models/*/*", "include/**/*.h", "include/**/*.hpp")


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
            found = manifest_path(rel)
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
    wanted = [(p, found) for p in listing.stdout.decode().split("\0") if p and (found := manifest_path(p))]
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


def _listing(root: Path, commit: str, *paths: str) -> list[tuple[str, int]]:
    """(path, size) of every blob at `commit` (under `paths` when given)."""
    listing = _git(root, "ls-tree", "-r", "-z", "-l", commit, "--", *paths)
    if listing.returncode != 0:
        raise InventoryError(f"{root}: git ls-tree {commit} failed: {listing.stderr.decode().strip()}")
    out = []
    for entry in listing.stdout.decode().split("\0"):
        meta, _, path = entry.partition("\t")
        size = meta.split()[-1] if meta else "-"
        if path and size.isdigit():
            out.append((path, int(size)))
    return out


def _read_files(root: Path, files: list[Path]) -> list[tuple[str, bytes]]:
    """(relative path, bytes) of files up to 2 MiB; an unreadable one only costs a citation."""
    out = []
    for file in files:
        try:
            if file.stat().st_size > _MAX_SOURCE_BYTES:
                continue
            out.append((file.relative_to(root).as_posix(), file.read_bytes()))
        except OSError:
            continue
    return out


def read_task_sources(source: TreeSource) -> list[SourceDocument]:
    """Every family's own files the audit reads (support.py, build and runtime code, READMEs, its qualification
    files; `paths.family_file`) from the same place and revision `read_tree` read the manifests. Files over
    2 MiB are skipped. Blocks."""
    root = Path(source.root)
    if source.read_via == "git":
        wanted = [(p, found[1]) for p, size in _listing(root, source.commit, "families")
                  if size <= _MAX_SOURCE_BYTES and (found := family_file(p))]
        blobs = _cat_files(root, source.commit, [p for p, _ in wanted])
        return [SourceDocument(path=p, family_dir=f, data=d) for (p, f), d in zip(wanted, blobs, strict=True)]
    families = root / "families"
    files = [f for f in sorted(families.rglob("*")) if f.is_file()] if families.is_dir() else []
    return [SourceDocument(path=rel, family_dir=found[1], data=data)
            for rel, data in _read_files(root, [f for f in files if family_file(f.relative_to(root).as_posix())])
            if (found := family_file(rel))]


def read_code_sources(source: TreeSource) -> CodeSources:
    """The checkout-wide files the audit reads (`paths.checkout_file`: precision defaults, the older layout's
    build plugins and runtimes, the support matrix, the served chat schema, the owners' qualification
    config, the qualification scheme, the Task SDK headers) from the same place and revision `read_tree`
    read the manifests. Files over 2 MiB are skipped. Blocks."""
    root = Path(source.root)
    found: list[tuple[str, str, str]] = []  # (path, kind, family)
    if source.read_via == "git":
        found = [(p, *kind) for p, size in _listing(root, source.commit)
                 if size <= _MAX_SOURCE_BYTES and (kind := checkout_file(p))]
        blobs = _cat_files(root, source.commit, [p for p, _, _ in found])
    else:
        files = sorted({f for g in _CODE_GLOBS for f in root.glob(g) if f.is_file()})
        read = [(rel, data, kind) for rel, data in _read_files(root, files) if (kind := checkout_file(rel))]
        found = [(rel, kind[0], kind[1]) for rel, _, kind in read]
        blobs = [data for _, data, _ in read]
    docs = [(kind, SourceDocument(path=p, family_dir=fam, data=d)) for (p, kind, fam), d in zip(found, blobs, strict=True)]

    def one(kind: str) -> SourceDocument | None:
        return next((d for k, d in docs if k == kind), None)

    def every(kind: str) -> list[SourceDocument]:
        return [d for k, d in docs if k == kind]

    return CodeSources(precision_defaults=every("precision"), family_code=every("family-code"),
                       support_matrix=one("matrix"), server_schema=one("server-schema"), owner_tasks=one("owner-tasks"),
                       owner_models=every("owner-model"), qualification_scheme=one("qualification-scheme"),
                       task_sdk=[d for d in every("task-sdk") if b"kTask" in d.data])


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


def open_checkout(root: str | Path, rev: str = "") -> TreeSource:
    """Where a checkout's files will be read from, as `read_tree` decides it but without needing manifests:
    the folder, or `rev` through git, or (a bare repository without `rev`) its HEAD through git.
    Raises InventoryError when the folder is missing or the revision unknown. Blocks (git)."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise InventoryError(f"{path}: no such folder; pass --trtmc PATH to a TensorRT-Model-Connect checkout")
    path = path.resolve()
    bare = not rev and _is_bare(path)
    if rev or bare:
        asked = rev or "HEAD"
        resolved = _git(path, "rev-parse", "--verify", "-q", f"{asked}^{{commit}}")
        if resolved.returncode != 0:
            if _git(path, "rev-parse", "--git-dir").returncode != 0:
                raise InventoryError(f"{path}: not a git repository; --rev {rev} needs one (or drop --rev)")
            raise InventoryError(f"{path}: revision {asked!r} does not name a commit; try a branch, tag or sha")
        return TreeSource(root=str(path), rev=rev, commit=resolved.stdout.decode().strip(), read_via="git", bare=bare)
    commit, dirty = _head(path)
    return TreeSource(root=str(path), commit=commit, dirty=dirty, read_via="folder")


def read_checkout_files(source: TreeSource, paths: list[str]) -> dict[str, bytes]:
    """The files of `paths` (checkout-relative) that exist where `source` reads; absent ones are left out.
    Blocks (file reads, or one `git ls-tree` and one `git cat-file` process)."""
    root = Path(source.root)
    if source.read_via == "git":
        present = {p for p, _ in _listing(root, source.commit, *paths)}
        wanted = [p for p in paths if p in present]
        return dict(zip(wanted, _cat_files(root, source.commit, wanted), strict=True))
    out = {}
    for rel in paths:
        file = root / rel
        if file.is_file():
            out[rel] = file.read_bytes()
    return out
