"""The server-records tailer follows each incarnation's file announced by ServerSpawned."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from adapters.trtmc.records_tail import ServerRecordsTailer
from orchestrator.events import ServerRecord, ServerSpawned, Warned
from orchestrator.spine.bus import Bus


class TestServerRecordsTailer:
    @pytest.mark.anyio
    async def test_follows_every_incarnation(self, tmp_path: Path) -> None:
        """Lines of records-1 and records-2 become ServerRecords tagged 1 and 2; a bad line is warned."""
        bus = Bus("t")
        got: list = []
        async with anyio.create_task_group() as tg:
            sub = bus.subscribe("probe", size=1000, lossy=True)
            tailer = ServerRecordsTailer(bus, poll_s=0.005)
            await tg.start(tailer.run)
            for inc in (1, 2):
                path = tmp_path / f"records-{inc}.jsonl"
                await bus.publish(ServerSpawned(incarnation=inc, pid=1, argv=[], records_path=str(path)))
                path.write_bytes(b'{"request_id":"r%d","status":200,"model_call_ms":3.5,"error_code":null}\n' % inc
                                 + (b"not json\n" if inc == 2 else b"") + b'{"request_id":"half')
            with anyio.fail_after(5):
                while len(got) < 3:
                    try:
                        ev = sub.receive_nowait()
                    except anyio.WouldBlock:
                        await anyio.sleep(0.01)
                        continue
                    if isinstance(ev, (ServerRecord, Warned)):
                        got.append(ev)
            tg.cancel_scope.cancel()
        recs = sorted((e.request_id, e.incarnation) for e in got if isinstance(e, ServerRecord))
        assert recs == [("r1", 1), ("r2", 2)]
        assert [e.code for e in got if isinstance(e, Warned)] == ["server_record_bad_line"]
