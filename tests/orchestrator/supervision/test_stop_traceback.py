"""A traceback our own stop signal raised in the server is journaled as such on ServerExited.stop_traceback (one
fact every fold reads); a traceback of anything else, or from a stop we did not ask for, is not."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from supervisor_support import drain, kinds, make_spec, new_bus

from orchestrator.supervision.stop_traceback import stop_traceback
from orchestrator.supervision.supervisor import supervised

_UVICORN = ["INFO:     Shutting down", "INFO:     Finished server process [7]", "Traceback (most recent call last):",
            '  File "/usr/lib/python3.11/asyncio/runners.py", line 118, in run', "    return self._loop.run_until_complete(task)",
            "KeyboardInterrupt", "INFO:     late log line after the traceback"]


class TestWhichTracebacks:
    def test_the_signal_s_own_exception_is_named(self) -> None:
        """SIGINT's KeyboardInterrupt (log lines after it notwithstanding) and SIGTERM's SystemExit are named."""
        assert stop_traceback(_UVICORN, signal.SIGINT) == "KeyboardInterrupt"
        assert stop_traceback(["Traceback (most recent call last):", '  File "x"', "SystemExit: 0"],
                              signal.SIGTERM) == "SystemExit: 0"

    @pytest.mark.parametrize(("tail", "sig"), [
        (["INFO:     Shutting down", "INFO:     Finished server process [7]"], signal.SIGINT),
        (["Traceback (most recent call last):", '  File "x"', "RuntimeError: lock held at shutdown"], signal.SIGINT),
        (_UVICORN, signal.SIGTERM),  # SIGTERM raises no KeyboardInterrupt: something else did
        # The last traceback decides: an interrupt earlier does not explain a later error.
        ([*_UVICORN, "Traceback (most recent call last):", '  File "y"', "OSError: disk full"], signal.SIGINT),
    ])
    def test_anything_else_is_not_explained_away(self, tail: list[str], sig: signal.Signals) -> None:
        assert stop_traceback(tail, sig) == ""


pytestmark = pytest.mark.anyio


class TestJournaled:
    @pytest.mark.parametrize(("raised", "journaled"), [("KeyboardInterrupt", "KeyboardInterrupt"),
                                                       ("RuntimeError", "")])
    async def test_a_real_server_stopped_by_sigint(self, tmp_path: Path, raised: str, journaled: str) -> None:
        """A real server subprocess prints a traceback as our SIGINT unwinds it: the KeyboardInterrupt is
        journaled as the stop's own; a RuntimeError at the same moment is not (it stays in output_tail only)."""
        bus, sub = new_bus()
        async with supervised(make_spec(tmp_path, "--traceback-at-stop", raised), bus):
            pass
        exited = kinds(drain(sub), "ServerExited")
        assert len(exited) == 1 and exited[0].expected and exited[0].signal == "SIGINT"
        assert any(line.startswith(raised) for line in exited[0].output_tail), exited[0].output_tail
        assert exited[0].stop_traceback == journaled
