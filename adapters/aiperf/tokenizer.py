"""An offline tokenizer directory for AIPerf: the model's own when configured, else a tiny cached one.
AIPerf always loads a tokenizer and would otherwise reach for the Hugging Face Hub; built once, atomically.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from orchestrator.base.errors import ClientError, ConfigError

__all__ = ["HUB_NAME", "TOKENIZER_FILES", "aiperf_tokenizer", "default_cache_dir", "ensure_tokenizer",
           "tokenizer_problem"]

# Files whose presence makes a directory loadable by transformers.AutoTokenizer without a hub.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
HUB_NAME = "aqbench/wordlevel-v1"
# The entry's one revision: a hub cache names snapshots by commit hash (40 hex digits). Fixed, as the build is:
# a new build would be a new name (wordlevel-v2), never a new revision of this one.
_REVISION = hashlib.sha1(HUB_NAME.encode()).hexdigest()
_COMMIT = re.compile(r"[0-9a-f]{40}")


def default_cache_dir() -> Path:
    """The private hub cache: `$AQBENCH_CACHE/hub` or `~/.cache/aqbench/hub`."""
    root = os.environ.get("AQBENCH_CACHE") or str(Path.home() / ".cache" / "aqbench")
    return Path(root) / "hub"


def _entry(hub: Path) -> Path:
    return hub / f"models--{HUB_NAME.replace('/', '--')}"


# aqbench's own tokenizer is laid out as an entry of a private Hugging Face hub cache
# (`<cache>/hub/models--aqbench--wordlevel-v1/snapshots/<rev>/`, `refs/main`), and AIPerf is given its name
# (`aqbench/wordlevel-v1`) with `HF_HUB_CACHE` at that cache and `HF_HUB_OFFLINE=1`. AIPerf 0.13.0 then skips its
# tokenizer prefetch, a process that loads transformers to read the tokenizer once before its services start (0.7-2.0
# s of work on 2 cores, 0.5-1.0 s of each AIPerf start-up's wall time: bench/RESULTS.md); given a folder path instead,
# it prefetches, and offline it cannot load a folder at all (it takes a path for a repo id).
def aiperf_tokenizer(path: Path) -> tuple[str, dict[str, str]]:
    """What AIPerf is given for the tokenizer folder `path`: its `--tokenizer` value and the environment it needs.

    A snapshot of a hub cache entry (`<hub>/models--<org>--<name>/snapshots/<rev>`, the revision `refs/main`
    names: what ensure_tokenizer returns for aqbench's own) is given by its name, with `HF_HUB_CACHE=<hub>` and
    `HF_HUB_OFFLINE=1`, so that AIPerf finds it in its cache and skips its prefetch; any other folder by its path,
    with no environment (AIPerf prefetches it)."""
    path = Path(path)
    entry = path.parent.parent
    if path.parent.name != "snapshots" or not entry.name.startswith("models--") or not _COMMIT.fullmatch(path.name):
        return str(path), {}
    org_name = entry.name.removeprefix("models--").split("--")
    try:
        main = (entry / "refs" / "main").read_text()
    except OSError:
        return str(path), {}
    # huggingface_hub reads refs/main whole (no strip): the revision must be exactly the file's text.
    if main != path.name or len(org_name) != 2 or tokenizer_problem(path):
        return str(path), {}
    return "/".join(org_name), {"HF_HUB_CACHE": str(entry.parent.resolve()), "HF_HUB_OFFLINE": "1"}


def tokenizer_problem(path: Path) -> str:
    """Why `path` is not a usable tokenizer directory; empty when it is."""
    if not path.is_dir():
        return f"{path} is not a directory"
    missing = [name for name in TOKENIZER_FILES if not (path / name).is_file()]
    if missing:
        return f"{path} lacks {', '.join(missing)}"
    return ""


def _build(target: Path) -> None:
    # Imported here: transformers costs about a second to import and only the first build needs it.
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[UNK]", "[PAD]", "[BOS]", "[EOS]"] + [chr(c) for c in range(33, 127)]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    # Split into single characters so token counts scale with text length, like a real tokenizer.
    tok.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
    )
    fast.save_pretrained(str(target))
    # AIPerf writes an empty config.json into a cached tokenizer-only snapshot before its services load it
    # offline (transformers looks for one); written here, AIPerf never writes into aqbench's cache.
    (target / "config.json").write_text("{}")


def ensure_tokenizer(configured: str = "", *, cache_dir: Path | None = None) -> Path:
    """Return a local tokenizer directory. Blocks (may build one: ~2 s the first time per machine).

    `configured` (the model's `tokenizer` key) wins when set and must be a valid directory. Otherwise aqbench's
    own, the snapshot folder of its entry in the hub cache `cache_dir` (default: default_cache_dir()).
    Raises ConfigError for a bad configured path, ClientError when the cache cannot be built.
    """
    if configured:
        path = Path(configured)
        problem = tokenizer_problem(path)
        if problem:
            raise ConfigError(
                f"models.tokenizer: {problem}; point it at a local Hugging Face tokenizer directory "
                "or remove the key to use aqbench's offline tokenizer"
            )
        return path
    entry = _entry(cache_dir or default_cache_dir())
    target = entry / "snapshots" / _REVISION
    if aiperf_tokenizer(target)[1]:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build beside the target and rename: concurrent builders never see a half-written directory.
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        _build(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if tokenizer_problem(target):  # someone else's build did not win either
                shutil.rmtree(target, ignore_errors=True)
                tmp.rename(target)
        # refs/main last, replaced whole: the entry is a cache hit only once its snapshot is complete.
        (entry / "refs").mkdir(exist_ok=True)
        ref = entry / "refs" / f".main-{os.getpid()}"
        ref.write_text(_REVISION)
        ref.replace(entry / "refs" / "main")
    except OSError as exc:
        raise ClientError(f"cannot build the offline tokenizer in {entry}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
