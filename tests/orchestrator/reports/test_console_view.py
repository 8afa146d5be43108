"""The live console: the correctness progress line counts HTTP and native misses apart."""

from __future__ import annotations

import io

from orchestrator.events import CorrectnessPhase, ModelPhase, PhaseFinished, PhaseStarted, VerdictReached
from orchestrator.spine.bus import Bus
from orchestrator.view.console import ConsoleView


def test_http_and_native_misses_are_counted_apart() -> None:
    """Three wrong answers asked both ways are 3 HTTP and 3 native misses, not "6 misses"."""
    out = io.StringIO()
    view = ConsoleView(Bus("run-test"), stream=out)
    view.show(PhaseStarted(phase="correctness", model="m", detail=CorrectnessPhase(requests=5, native=True)))
    for path in ("http", "native"):
        for i, verdict in enumerate(["wrong", "wrong", "wrong", "correct"]):
            view.show(VerdictReached(model="m", path=path, item_id=f"i{i}", arm="audio",  # type: ignore[arg-type]
                                     verdict=verdict, item_kind="content"))  # type: ignore[arg-type]
        view.show(VerdictReached(model="m", path=path, item_id="i0", arm="silence", verdict="wrong",  # type: ignore[arg-type]
                                 item_kind="content"))
    view.show(PhaseFinished(phase="correctness", model="m", outcome="passed"))
    lines = out.getvalue().splitlines()
    bar = next(line for line in reversed(lines) if "audio-arm misses" in line)
    assert bar.endswith("10/10  audio-arm misses: http 3, native 3"), bar


def test_a_model_without_a_profile_shows_no_empty_parentheses() -> None:
    """The model line names the checkpoint, and its TRTMC profile only when there is one."""
    out = io.StringIO()
    view = ConsoleView(Bus("run-test"), stream=out)
    view.show(PhaseStarted(phase="model", model="qwen", detail=ModelPhase(checkpoint="Qwen/Qwen3-0.6B")))
    view.show(PhaseStarted(phase="model", model="w", detail=ModelPhase(checkpoint="openai/whisper-tiny",
                                                                       profile="whisper-tiny-fp16")))
    assert out.getvalue().splitlines() == ["== qwen: Qwen/Qwen3-0.6B",
                                           "== w: openai/whisper-tiny (whisper-tiny-fp16)"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar_and_the_same_lines() -> None:
    """On a terminal the stage's progress is a rich bar (count and note), with the stage lines above it."""
    out = _Terminal()
    view = ConsoleView(Bus("run-test"), stream=out)
    view.show(PhaseStarted(phase="correctness", model="m", detail=CorrectnessPhase(requests=2, native=False)))
    for i in range(2):
        view.show(VerdictReached(model="m", path="http", item_id=f"i{i}", arm="audio", verdict="correct",
                                 item_kind="content"))
    view.show(PhaseFinished(phase="correctness", model="m", outcome="passed"))
    text = out.getvalue()
    assert "correctness: started" in text and "correctness: passed" in text
    assert "2/2" in text and "audio-arm misses: http 0" in text
    assert "\x1b[" in text  # drawn in place with terminal control sequences, not as plain lines


def test_run_aiperf_live_line_redraws_on_a_terminal_and_prints_lines_elsewhere() -> None:
    """run-aiperf's live line: done, errors and p50s; in place on a terminal, one plain line per print off it."""
    from orchestrator.view.line import LiveLine
    from orchestrator.view.terminal import LiveOutput

    for stream, in_place in ((_Terminal(), True), (io.StringIO(), False)):
        # As the command passes it: rich's LiveOutput (a terminal), or nothing (plain lines, no rich).
        line = LiveLine(Bus("run-test"), out=LiveOutput(stream) if in_place else None, stream=stream)
        line.done, line.errors = 3, 1
        line.print()
        line.print()
        line.out.end_bar()
        text = stream.getvalue()
        assert "live: done 3 (+0 warmup)  errors 1" in text
        assert ("\x1b[" in text) is in_place
        if not in_place:
            assert text.count("live: done 3") == 2


def test_server_stop_follows_the_stages_last_progress_line() -> None:
    """The server's stopping and stopped lines come from the bus, after the stage's final progress line,
    in the order the events happened."""
    from orchestrator.events import ServerStateChanged

    out = io.StringIO()
    view = ConsoleView(Bus("run-test"), stream=out)
    view.show(PhaseStarted(phase="correctness", model="m", detail=CorrectnessPhase(requests=1, native=False)))
    view.show(VerdictReached(model="m", path="http", item_id="i0", arm="audio", verdict="correct", item_kind="content"))
    view.show(PhaseFinished(phase="correctness", model="m", outcome="passed"))
    view.show(ServerStateChanged(incarnation=1, state="stopping", previous="ready", reason="stop requested"))
    view.show(ServerStateChanged(incarnation=1, state="stopped", previous="stopping"))
    lines = out.getvalue().splitlines()
    assert lines[-4].strip().startswith("correctness") and lines[-4].endswith("1/1  audio-arm misses: http 0")
    assert lines[-3:] == ["  correctness: passed", "  server stopping (incarnation 1): stop requested",
                          "  server stopped (incarnation 1)"]


def test_a_long_reason_keeps_its_last_line_whole() -> None:
    """A server's usage text followed by its error is cut before the error line, never through it."""
    from orchestrator.view.console import clip

    reason = ("server did not start: usage: trtmc-server [-h] [--model-name MODEL_NAME] [--request-timeout "
              "REQUEST_TIMEOUT] " * 4 + "\ntrtmc-server: error: bundle does not exist")
    out = io.StringIO()
    ConsoleView(Bus("run-test"), stream=out).show(PhaseFinished(phase="server", model="m", outcome="failed",
                                                                reason=reason))
    line = out.getvalue().strip()
    assert line.endswith(" … trtmc-server: error: bundle does not exist") and len(line) < 340, line
    assert clip("short", 300) == "short"
