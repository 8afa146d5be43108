"""`aqbench ab`: baseline and candidate interleaved in short blocks in one session, decided block-paired."""

from orchestrator.ab.render import render_markdown, write_result
from orchestrator.ab.session import AbOptions, check_comparable, run_ab_session
from orchestrator.ab.verdict import AbResult, decide

__all__ = ["AbOptions", "AbResult", "check_comparable", "decide", "render_markdown", "run_ab_session", "write_result"]
