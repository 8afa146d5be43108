"""Distributions' versions and folders read without importlib.metadata agree with it."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import pytest

from adapters.aiperf.install import check_install
from orchestrator.base import dists


def _metadata_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


@pytest.mark.parametrize("name", ["aiperf", "anyio", "msgspec", "numpy", "faster-whisper", "aqbench", "PyYAML", "typing-extensions", "no-such-dist"])
def test_versions_are_importlib_metadata_s(name: str) -> None:
    assert dists.dist_version(name) == _metadata_version(name)


def test_aiperf_fingerprint_is_the_sha256_of_its_record() -> None:
    record = metadata.distribution("aiperf").read_text("RECORD")
    assert record is not None
    assert check_install().fingerprint == hashlib.sha256(record.encode("utf-8")).hexdigest()


def test_the_first_folder_on_the_path_wins_and_an_egg_info_says_its_version(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "Some_Dist.egg-info").mkdir(parents=True)
    (first / "Some_Dist.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: some-dist\nVersion: 1.2\n\n"
                                                            "Version: 9 (the body, not a header)\n")
    (second / "some_dist-3.0.dist-info").mkdir(parents=True)
    (second / "some_dist-3.0.dist-info" / "METADATA").write_text("Name: some-dist\nVersion: 3.0\n")
    (second / "other.dist-info").mkdir()  # neither a version in its name nor a METADATA: no version
    path = [str(first), str(tmp_path / "missing"), str(second)]
    assert dists.dist_version("some.dist", path) == "1.2"
    assert dists.dist_folder("SOME-DIST", path) == first / "Some_Dist.egg-info"
    assert dists.dist_version("some_dist", path[1:]) == "3.0"
    assert dists.dist_version("other", path) == ""
    assert dists.dist_folder("absent", path) is None
