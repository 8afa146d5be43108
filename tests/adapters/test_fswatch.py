"""FolderWatch: a change in the folder wakes a waiter long before its backstop; stop wakes it too; a
missing folder is polled until it appears; LineFollower.follow streams on notifications, not its poll."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import anyio
import pytest

from adapters.fswatch import FolderWatch
from adapters.tail import LineFollower

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@linux_only
class TestFolderWatch:
    @pytest.mark.anyio
    async def test_write_wakes_the_waiter(self, tmp_path: Path) -> None:
        watch = FolderWatch(tmp_path, poll_s=60.0, backstop_s=60.0)
        assert watch.notified
        (tmp_path / "a.jsonl").write_bytes(b"x\n")
        with anyio.fail_after(5):
            await watch.wait()
        watch.close()

    @pytest.mark.anyio
    async def test_appends_to_an_open_file_wake_it_each_time(self, tmp_path: Path) -> None:
        path = tmp_path / "a.jsonl"
        path.write_bytes(b"")
        watch = FolderWatch(tmp_path, poll_s=60.0, backstop_s=60.0)
        with path.open("ab", buffering=0) as fh:
            for i in range(3):
                fh.write(f"{i}\n".encode())
                with anyio.fail_after(5):
                    await watch.wait()
        watch.close()

    @pytest.mark.anyio
    async def test_draining_notifications_reuses_one_buffer(self, tmp_path: Path) -> None:
        """Each wake-up reads the queued notifications into the watch's own buffer: os.read allocated
        and freed 64 KiB per call, several times a second over a soak's hours (issue 23)."""
        path = tmp_path / "a.jsonl"
        path.write_bytes(b"")
        watch = FolderWatch(tmp_path, poll_s=60.0, backstop_s=60.0)
        tracemalloc.start()
        try:
            with path.open("ab", buffering=0) as fh:
                for i in range(3):
                    fh.write(f"{i}\n".encode())
                    tracemalloc.reset_peak()
                    with anyio.fail_after(5):
                        await watch.wait()
                    current, peak = tracemalloc.get_traced_memory()
                    assert peak - current < 32 * 1024, f"a wake-up peaked {peak - current} bytes above its end"
        finally:
            tracemalloc.stop()
            watch.close()

    @pytest.mark.anyio
    async def test_stop_wakes_the_waiter(self, tmp_path: Path) -> None:
        watch = FolderWatch(tmp_path, poll_s=60.0, backstop_s=60.0)
        stop = anyio.Event()

        async def set_stop() -> None:
            stop.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(set_stop)
            with anyio.fail_after(5):
                await watch.wait(stop=stop)
        watch.close()

    @pytest.mark.anyio
    async def test_quiet_folder_waits_for_the_backstop(self, tmp_path: Path) -> None:
        watch = FolderWatch(tmp_path, poll_s=60.0, backstop_s=0.05)
        start = anyio.current_time()
        with anyio.fail_after(5):
            await watch.wait()
        assert anyio.current_time() - start >= 0.04
        watch.close()

    @pytest.mark.anyio
    async def test_missing_folder_polls_then_is_watched_once_it_exists(self, tmp_path: Path) -> None:
        folder = tmp_path / "later"
        watch = FolderWatch(folder, poll_s=0.01, backstop_s=60.0)
        assert not watch.notified
        with anyio.fail_after(5):
            await watch.wait()  # returns after poll_s
        folder.mkdir()
        with anyio.fail_after(5):
            await watch.wait()  # opens the watch and returns: changes while unwatched are unknown
        assert watch.notified
        (folder / "a").write_bytes(b"1")
        with anyio.fail_after(5):
            await watch.wait()
        watch.close()

    @pytest.mark.anyio
    async def test_removed_folder_falls_back_to_polling(self, tmp_path: Path) -> None:
        folder = tmp_path / "gone"
        folder.mkdir()
        watch = FolderWatch(folder, poll_s=0.01, backstop_s=60.0)
        folder.rmdir()
        with anyio.fail_after(5):
            await watch.wait()
        assert not watch.notified
        with anyio.fail_after(5):
            await watch.wait()  # polls now
        watch.close()


@linux_only
@pytest.mark.anyio
async def test_follow_streams_on_notifications_not_its_poll(tmp_path: Path) -> None:
    """With a 60 s poll, lines still arrive as they are written: the folder's notifications drive reads."""
    path = tmp_path / "f.jsonl"
    follower = LineFollower(path, poll_s=60.0)
    stop = anyio.Event()
    got: list[bytes] = []
    sent = anyio.Event()

    async def writer() -> None:
        with path.open("ab", buffering=0) as fh:
            for i in range(3):
                fh.write(f"{i}\n".encode())
                await sent.wait()
        stop.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        with anyio.fail_after(10):
            async for batch in follower.follow(stop):
                got += batch
                if len(got) < 3:
                    sent.set()
                    sent = anyio.Event()
                else:
                    sent.set()
    follower.close()
    assert got == [b"0", b"1", b"2"]


@linux_only
@pytest.mark.anyio
async def test_prefix_ignores_other_files_of_the_folder(tmp_path: Path) -> None:
    """Writes to other files do not wake a watch with a prefix (it waits for its backstop); its own do."""
    watch = FolderWatch(tmp_path, prefix="tap-", poll_s=60.0, backstop_s=0.2)
    (tmp_path / "inputs.json").write_bytes(b"x" * 100_000)
    start = anyio.current_time()
    with anyio.fail_after(5):
        await watch.wait()
    assert anyio.current_time() - start >= 0.15
    watch.backstop_s = 60.0
    (tmp_path / "tap-1.jsonl").write_bytes(b"{}\n")
    with anyio.fail_after(5):
        await watch.wait()
    watch.close()
