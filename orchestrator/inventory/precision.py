"""TRTMC's default precision for a manifest that names none, read from the checkout with its citation.
The e2e harness builds every manifest with `case.metadata.get("precision", "fp32")`, and the build CLI sets
`public_options["precision"] = "fp32"` when none is given: an omitted precision is fp32 there, not unknown."""

from __future__ import annotations

import re
from collections.abc import Iterable

from orchestrator.inventory.records import Evidence, SourceDocument

__all__ = ["precision_default"]

# `.get("precision", "fp32")` (harness) and `["precision"] = "fp32"` (build CLI): a default, not a choice.
_DEFAULT_PATTERNS = (
    re.compile(r"""\.get\(\s*["']precision["']\s*,\s*["'](\w+)["']\s*\)"""),
    re.compile(r"""\[\s*["']precision["']\s*\]\s*=\s*["'](\w+)["']"""),
)


def precision_default(sources: Iterable[SourceDocument]) -> tuple[str, list[Evidence]]:
    """The default precision and every line that sets it; ("", []) when the checkout shows none, or when
    its files disagree (then no default is assumed and the disagreement is in the evidence)."""
    evidence: list[Evidence] = []
    for doc in sorted(sources, key=lambda d: d.path):
        for n, line in enumerate(doc.data.decode("utf-8", "replace").splitlines(), 1):
            for pattern in _DEFAULT_PATTERNS:
                if m := pattern.search(line):
                    evidence.append(Evidence(claim="precision_default", file=doc.path, field=f"line {n}",
                                             value=m.group(1).lower()))
    values = {str(ev.value) for ev in evidence}
    return (values.pop() if len(values) == 1 else ""), evidence
