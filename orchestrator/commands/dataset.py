"""`aqbench dataset check [PATH]`: verify a dataset folder and print its table."""

from __future__ import annotations

import argparse
from collections import Counter

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dataset", help="inspect an audio-QA dataset")
    dsub = p.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    check = dsub.add_parser("check", help="verify every file, hash and property; print the dataset's table")
    check.add_argument("path", nargs="?", default=None,
                       help="dataset folder (default: the shipped audioqa-v1)")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orchestrator.config import DatasetConfig
    from orchestrator.dataset import load_dataset, resolve_dataset_path

    path = args.path or resolve_dataset_path(DatasetConfig())
    ds = load_dataset(path)
    items = ds.items
    clips = {it.audio: it for it in items}
    n = len(items)
    answerable = sum(it.transcript_answerable for it in items)
    pairs = ds.conditioning_pairs()
    print(f"{ds.root}: {n} items, {len(clips)} clips, identity {ds.identity}")
    print(f"total {sum(c.duration_s for c in clips.values()):.1f} s, "
          f"{sum(c.bytes for c in clips.values()) / 1e6:.2f} MB; "
          f"transcript-answerable {answerable}/{n} ({100 * answerable / n:.0f} %); "
          f"conditioning pairs: {sum(p.relation == 'same_clip' for p in pairs)} same clip, "
          f"{sum(p.relation == 'same_question' for p in pairs)} same question")
    _table("items by kind", Counter(it.kind for it in items))
    _table("items by scoring", Counter(it.scoring for it in items))
    _table("clips by format", Counter(f"{c.container}/{c.codec}" for c in clips.values()))
    _table("clips by rate (Hz)", Counter(str(c.sample_rate_hz) for c in clips.values()))
    _table("clips by channels", Counter(str(c.channels) for c in clips.values()))
    return 0


def _table(title: str, counts: Counter[str]) -> None:
    print(f"\n{title}:")
    width = max(len(k) for k in counts)
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {key:<{width}}  {count:>3}")
