"""The campaign task's journal follower (whole lines only, as they appear) and its folder packing
(large files stay on the node and are listed)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from adapters.ray.task import JournalFollower, pack_folder
from orchestrator.campaign.events import KeptFile


class TestJournalFollower:
    def test_whole_lines_only_and_nothing_before_the_journal_exists(self, tmp_path: Path) -> None:
        """Before qualify creates its run folder there is nothing; a half-written line waits for its end."""
        follower = JournalFollower(tmp_path)
        assert follower.read() == b""
        run = tmp_path / "m-20260101-000000-abcd"
        run.mkdir()
        journal = run / "events.jsonl"
        journal.write_bytes(b'{"a":1}\n{"b":')
        assert follower.read() == b'{"a":1}\n'
        assert follower.read() == b""
        with journal.open("ab") as fh:
            fh.write(b'2}\n{"c":3}\n')
        assert follower.read() == b'{"b":2}\n{"c":3}\n'


class TestPackFolder:
    def test_large_files_stay_and_the_journal_is_not_packed(self, tmp_path: Path) -> None:
        """Files over the limit are listed with their node path; events.jsonl (streamed already) is left out."""
        (tmp_path / "events.jsonl").write_bytes(b"x\n")
        (tmp_path / "aqbench.log").write_bytes(b"log\n")
        (tmp_path / "aiperf" / "m").mkdir(parents=True)
        (tmp_path / "aiperf" / "m" / "profile_export.jsonl").write_bytes(b"r" * 2048)
        (tmp_path / "aiperf" / "m" / "events.jsonl").write_bytes(b"nested: kept\n")
        data, kept = pack_folder(tmp_path, limit_bytes=1024)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            assert sorted(tar.getnames()) == ["aiperf/m/events.jsonl", "aqbench.log"]
        assert kept == [KeptFile(path=str(tmp_path / "aiperf" / "m" / "profile_export.jsonl"), size_bytes=2048)]
