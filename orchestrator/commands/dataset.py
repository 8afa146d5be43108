"""`aqbench dataset check [PATH]`: verify a dataset folder and print its table, counts by kind and arm."""

from __future__ import annotations

import argparse
from collections import Counter

from orchestrator.base.errors import UsageError
from orchestrator.config import DatasetConfig

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("dataset", help="inspect an audio-QA dataset",
                       description="Exit 0 when every file, hash and property checks out, 2 when one does not (each "
                       "named) or on a usage error, 3 when aqbench itself failed.")
    dsub = p.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    check = dsub.add_parser("check", help="verify every file, hash and property; print the dataset's table")
    check.add_argument("path", nargs="?", default=None,
                       help="dataset folder (default: the shipped audioqa-v2; audioqa-v1 is shipped too)")
    check.add_argument("--conditioning-items", type=int, default=0, metavar="N",
                       help="count the silence and transcript arms as [dataset] conditioning_items = N runs them "
                            "(default 0: every item)")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: the dataset module (numpy, soundfile) loads only for the commands that read one.
    from orchestrator.dataset import conditioning_subset, load_dataset, resolve_dataset_path

    if args.conditioning_items < 0:
        raise UsageError(f"--conditioning-items {args.conditioning_items}: expected 0 (every item) or more")
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
    arms = {"audio": {it.id for it in items},
            **{arm: conditioning_subset(ds, arm, args.conditioning_items) for arm in ("silence", "transcript")}}
    _kinds_by_arm(Counter(it.kind for it in items),
                  {arm: Counter(it.kind for it in items if it.id in ids) for arm, ids in arms.items()},
                  args.conditioning_items)
    _table("items by scoring", Counter(it.scoring for it in items))
    _table("clips by format", Counter(f"{c.container}/{c.codec}" for c in clips.values()))
    _table("clips by rate (Hz)", Counter(str(c.sample_rate_hz) for c in clips.values()))
    _table("clips by channels", Counter(str(c.channels) for c in clips.values()))
    return 0


def _kinds_by_arm(kinds: Counter[str], by_arm: dict[str, Counter[str]], conditioning_items: int) -> None:
    """Items by kind, and the requests each arm asks of each kind (the transcript arm: speech items only)."""
    subset = f" (silence and transcript on {conditioning_items} items each)" if conditioning_items else ""
    print(f"\nitems by kind and arm{subset}:")
    width = max(len(k) for k in [*kinds, "total"])
    arms = list(by_arm)
    print(f"  {'kind':<{width}}  {'items':>5}  " + "  ".join(f"{a:>10}" for a in arms))
    for kind, count in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {kind:<{width}}  {count:>5}  " + "  ".join(f"{by_arm[a][kind]:>10}" for a in arms))
    print(f"  {'total':<{width}}  {sum(kinds.values()):>5}  "
          + "  ".join(f"{sum(by_arm[a].values()):>10}" for a in arms))


def _table(title: str, counts: Counter[str]) -> None:
    print(f"\n{title}:")
    width = max(len(k) for k in counts)
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {key:<{width}}  {count:>3}")
