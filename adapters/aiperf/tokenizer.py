"""An offline tokenizer directory for AIPerf: the model's own when configured, else a tiny cached one.

AIPerf always loads a tokenizer and would otherwise reach for the Hugging Face Hub; this module makes
sure it never has to. Builds at most once per machine (cache dir), atomically.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from orchestrator.errors import ClientError, ConfigError

__all__ = ["TOKENIZER_FILES", "default_cache_dir", "ensure_tokenizer", "tokenizer_problem"]

# Files whose presence makes a directory loadable by transformers.AutoTokenizer without a hub.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
_VERSION = "wordlevel-v1"


def default_cache_dir() -> Path:
    """`$AQBENCH_CACHE/tokenizer` or `~/.cache/aqbench/tokenizer`."""
    root = os.environ.get("AQBENCH_CACHE") or str(Path.home() / ".cache" / "aqbench")
    return Path(root) / "tokenizer" / _VERSION


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


def ensure_tokenizer(configured: str = "", *, cache_dir: Path | None = None) -> Path:
    """Return a local tokenizer directory. Blocks (may build one: ~2 s the first time per machine).

    `configured` (the model's `tokenizer` key) wins when set and must be a valid directory.
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
    target = cache_dir or default_cache_dir()
    if not tokenizer_problem(target):
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
    except OSError as exc:
        raise ClientError(f"cannot build the offline tokenizer in {target.parent}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
