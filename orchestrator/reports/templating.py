"""The one Jinja2 environment of the HTML reports: autoescaped templates from `templates/` beside this file.

Owns loading, escaping and the generic filters; it knows nothing of any report's content.
"""

from __future__ import annotations

import hashlib
import json
from html import escape
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from orchestrator.base.figures import figure
from orchestrator.reports.text import dash, gate_pct, mib, ms, num, pct, rate_cell, signed_pct, words

__all__ = ["TEMPLATES", "render"]

# Resolved from this file, so an editable install reads the checkout's folder and a wheel its own copy.
TEMPLATES = Path(__file__).resolve().parent / "templates"


def _quotes_as_stdlib(value: object) -> object:
    """A printed value whose quotes are escaped as the stdlib's html.escape writes them (`&quot;`, `&#x27;`)
    where markupsafe would write `&#34;` and `&#39;`: the same characters, and the bytes the f-string pages
    wrote. Anything else is left to autoescape; markup (macro output, charts) passes as it is."""
    text = value if type(value) is str else None
    if text is None:
        if hasattr(value, "__html__"):
            return value
        text = str(value)
    return Markup(escape(text)) if "'" in text or '"' in text else text


def _cell(value: object, blank: str = dash) -> object:
    """A table cell's value in a reader's words (text.words: yes/no, lists joined), or `blank` (the report
    dash) where there is none (None or an empty string)."""
    return words(value, blank)


def _pretty(value: object, limit: int = 3000) -> str:
    """Text for a <pre>: a string as it is, anything else as indented JSON; cut at `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)
    return text[:limit]


def _compiled_cache(folder: str | None = None) -> BytecodeCache | None:
    """The templates compiled once for every later process (about 0.1 CPU-s a run's reports, bench/overhead.py):
    Jinja's own file cache (by default its private `_jinja2-cache-<uid>` folder in the temporary directory), keyed
    by each template's source. Jinja's key leaves out the environment's options, so the file names carry a digest
    of this module and of Jinja's version: a change to either compiles anew. None where no safe folder exists."""
    tag = hashlib.sha256(Path(__file__).read_bytes() + jinja2.__version__.encode()).hexdigest()[:12]
    try:
        return FileSystemBytecodeCache(folder, pattern=f"__aqbench_{tag}_%s.cache")
    except (OSError, RuntimeError):  # Jinja refuses a temporary folder it does not own alone
        return None


def _environment(compiled: str | None = None) -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        bytecode_cache=_compiled_cache(compiled),
        autoescape=True,
        # A misspelt or missing variable fails the render instead of printing nothing.
        undefined=StrictUndefined,
        finalize=_quotes_as_stdlib,
        keep_trailing_newline=True,
        # Tag-only lines leave no blank line behind; the templates glue one-line parts with `-`.
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    # Column numbers without a loop object per cell: tables are the pages' hot path.
    env.globals["enumerate"] = enumerate
    env.filters["cell"] = _cell
    env.filters["pretty"] = _pretty
    # The house formats of reports/text.py (shared with the Markdown reports), as filters: `{{ x|ms }}`;
    # `{{ x|figure }}` is orchestrator/base/figures.py's plain significant digits (never 1.68e+03).
    env.filters.update(figure=figure, ms=ms, num=num, pct=pct, signed_pct=signed_pct, mib=mib, rate_cell=rate_cell,
                       gate_pct=gate_pct)
    return env


_ENV = _environment()


def render(template_name: str, **context: Any) -> str:  # a template's own names and values, as Jinja2 takes them
    """The text of `template_name` (a file in `templates/`) rendered with `context`.

    Raises jinja2.UndefinedError when the template uses a name the context lacks.
    """
    return _ENV.get_template(template_name).render(**context)
