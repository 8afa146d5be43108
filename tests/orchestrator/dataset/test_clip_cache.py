"""The clip cache: one entry per content, written by rename so concurrent writers share it; the manifest
that names a run's clips; pruning by what the remaining runs name."""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from orchestrator.config import RunConfig
from orchestrator.dataset import load_dataset, prepare_arms
from orchestrator.dataset.clip_cache import (
    CLIP_MANIFEST,
    ClipCache,
    ClipSent,
    append_manifest,
    clip_cache_dir,
    read_manifest,
    referenced_hashes,
)

SHIPPED = Path(__file__).resolve().parents[3] / "datasets" / "audioqa-v1"


def _put_many(folder: str, n: int) -> list[str]:
    cache = ClipCache(folder)
    return [cache.put(f"clip {i % 5}".encode() * 1000, "wav")[1] for i in range(n)]


class TestClipCache:
    def test_one_entry_per_content(self, tmp_path: Path) -> None:
        """The same bytes stored twice give one file named by their sha256; other bytes another file."""
        cache = ClipCache(tmp_path / "c")
        a, sha_a = cache.put(b"RIFF-one", "wav")
        again, sha_again = cache.put(b"RIFF-one", "wav")
        _, sha_b = cache.put(b"RIFF-two", "mp3")
        assert sha_a == sha_again == hashlib.sha256(b"RIFF-one").hexdigest() and a == again
        assert a.name == f"{sha_a}.wav" and a.read_bytes() == b"RIFF-one"
        assert [p.name for p in cache.entries()] == sorted([f"{sha_a}.wav", f"{sha_b}.mp3"])
        assert sorted(os.listdir(tmp_path / "c")) == sorted([f"{sha_a}.wav", f"{sha_b}.mp3"])  # no temporary left

    def test_concurrent_writers_share_it(self, tmp_path: Path) -> None:
        """Four processes putting the same five contents at once leave five whole entries and no temporary."""
        folder = str(tmp_path / "shared")
        with ProcessPoolExecutor(4) as pool:
            results = list(pool.map(_put_many, [folder] * 4, [40] * 4))
        assert all(r == results[0] for r in results)
        names = sorted(os.listdir(folder))
        assert len(names) == 5 and not [n for n in names if n.startswith(".")]
        for name in names:
            data = (Path(folder) / name).read_bytes()
            assert hashlib.sha256(data).hexdigest() == name.split(".")[0]

    def test_prune_keeps_named_and_recent_entries(self, tmp_path: Path) -> None:
        """Pruning drops the entries nobody names, except those written or reused within the grace time;
        a dry run removes nothing."""
        cache = ClipCache(tmp_path)
        named, sha_named = cache.put(b"named", "wav")
        old, _ = cache.put(b"old", "wav")
        fresh, _ = cache.put(b"fresh", "wav")
        hour_ago = time.time() - 3700
        for p in (named, old):
            os.utime(p, (hour_ago, hour_ago))
        assert cache.prune({sha_named}, grace_s=3600, dry_run=True) == [old] and old.exists()
        assert cache.prune({sha_named}, grace_s=3600) == [old]
        assert not old.exists() and named.exists() and fresh.exists()
        cache.put(b"named", "wav")  # reuse refreshes the entry's time
        assert time.time() - named.stat().st_mtime < 60
        assert cache.prune(set(), grace_s=0) == sorted([named, fresh])

    def test_default_folder_is_beside_the_output_dir(self, tmp_path: Path) -> None:
        """Unset, the cache is `<output_dir>-clips` beside the output folder; `[run] clip_cache` moves it."""
        assert clip_cache_dir(RunConfig(output_dir=str(tmp_path / "runs"))) == tmp_path / "runs-clips"
        assert clip_cache_dir(RunConfig(output_dir="runs", clip_cache="/x/clips")) == Path("/x/clips")


class TestManifest:
    def test_round_trip_and_torn_line(self, tmp_path: Path) -> None:
        """Appended lines read back in order; a torn last line (a killed run) is skipped."""
        clips = [ClipSent(key=f"a-{i}.audio", sha256=f"{i:064x}", bytes=i, format="wav", path="/c") for i in range(3)]
        append_manifest(tmp_path, clips[:2])
        append_manifest(tmp_path, clips[2:])
        with (tmp_path / CLIP_MANIFEST).open("ab") as f:
            f.write(b'{"key":"torn')
        assert read_manifest(tmp_path / CLIP_MANIFEST) == clips
        run = tmp_path / "run"
        append_manifest(run / "aiperf" / "wire", clips[:1])
        assert referenced_hashes([run, tmp_path / "none"]) == {clips[0].sha256}

    def test_prepare_arms_names_every_clip_and_shares_the_cache(self, tmp_path: Path) -> None:
        """Every audio or silence request's clip is in the run's manifest with its true hash and size; decoded
        and silent clips live in the cache once, and a second run writes nothing new there."""
        ds, cache = load_dataset(SHIPPED), tmp_path / "cache"
        rows = prepare_arms(ds, ["audio", "silence", "transcript"], tmp_path / "run1" / "wire", cache=cache)
        sent = {c.key: c for c in read_manifest(tmp_path / "run1" / "wire" / CLIP_MANIFEST)}
        with_audio = [r for r in rows if r.audio_path is not None]
        assert set(sent) == {r.key for r in with_audio}
        for r in with_audio:
            data = Path(r.audio_path).read_bytes()  # type: ignore[arg-type]
            assert sent[r.key].sha256 == hashlib.sha256(data).hexdigest() and sent[r.key].bytes == len(data)
            assert r.audio_bytes == len(data) and sent[r.key].path == r.audio_path
        cached = {p.name: p.stat().st_mtime_ns for p in ClipCache(cache).entries()}
        assert cached and {Path(c.path).name for c in sent.values() if Path(c.path).parent == cache} == set(cached)
        again = prepare_arms(ds, ["audio", "silence"], tmp_path / "run2" / "wire", cache=cache)
        assert {p.name for p in ClipCache(cache).entries()} == set(cached)
        assert [r.audio_path for r in again] == [r.audio_path for r in rows if r.arm != "transcript"]
        assert not list((tmp_path / "run2").rglob("*.wav"))  # the run folder holds the manifest only
