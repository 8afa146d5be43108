"""`aqbench compare`: two finished runs, side by side, from their journals alone."""

from orchestrator.compare.build import compare_runs, journal_of
from orchestrator.compare.refusal import refusal_paragraph, write_refusal
from orchestrator.compare.render import render_html, render_json, render_markdown, write_comparison
from orchestrator.compare.schema import Comparison, Figure, ModelComparison

__all__ = ["Comparison", "Figure", "ModelComparison", "compare_runs", "journal_of", "render_html", "render_json",
           "render_markdown", "write_comparison", "refusal_paragraph", "write_refusal"]
