"""inventory.html: the Markdown report's content as one self-contained page (inline CSS, no scripts),
in the house style of `orchestrator/reports/html.py`. Every text is escaped. Pure.
"""

from __future__ import annotations

from html import escape
from typing import Any

from orchestrator.inventory.records import CheckpointRow, Evidence, Inventory
from orchestrator.inventory.render import checkpoint_label, gap_sentence, source_line

__all__ = ["to_html"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:22px}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}h3{margin-top:24px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.status{font-weight:bold;padding:1px 6px;border-radius:3px}
.st-aiperf-qualified{background:#d8f0d8}.st-error{background:#f8d0d0}
.st-unsupported,.st-blocked{background:#f0e0c0}.st-family-validated,.st-implemented,.st-planned{background:#e0e8f8}
.note{color:#666;font-size:12px}code{font-size:12px}
"""


def _e(value: Any) -> str:
    return escape("-" if value is None or value == "" else str(value))


def _status(status: str) -> str:
    return f'<span class="status st-{escape(status)}">{escape(status)}</span>'


def _cite(e: Evidence) -> str:
    return f"<code>{_e(e.file)}</code> {_e(e.field)}"


def _md_code(text: str) -> str:
    """Markdown's `code` spans as <code>, everything else escaped."""
    parts = text.split("`")
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))


def _row(r: CheckpointRow) -> str:
    cells = [_e(checkpoint_label(r)), _e(r.capability_class), _status(r.status),
             _e(r.profile or "(no manifest)"), _e(r.task_strategy), _e(gap_sentence(r))]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _details(inv: Inventory, r: CheckpointRow) -> str:
    items = [f"class <b>{_e(r.capability_class)}</b>, status {_status(r.status)}, family <code>{_e(r.family)}</code>"]
    if r.profile:
        src = f" ({_cite(r.precision_source)})" if r.precision_source else ""
        items.append(f"normal profile <code>{_e(r.profile)}</code> (<code>{_e(r.file)}</code>): Task "
                     f"<code>{_e(r.task_strategy)}</code>, precision {_e(r.precision)}{src}")
    items += [f"same clip, counted once: {_e(e.value)} ({_cite(e)})" for e in r.same_clip]
    items += [f"owners' status: <code>{_e(o.profile)}</code> {_e(o.precision)}: "
              f"{_e(', '.join(f'{k} {v}' for k, v in o.platforms.items()))}"
              f"{'; provider: ' + _e(o.provider) if o.provider else ''} (<code>{_e(o.file)}</code> line {o.line})"
              for o in r.owner_status]
    items += [f"variant <code>{_e(v.profile)}</code>: {_e('; '.join(v.differs or v.kinds))}"
              for v in inv.variants if v.checkpoint == r.checkpoint and v.profile not in r.l0_tier_profiles]
    if r.l0_tier_profiles:
        items.append(f"L0 CI tier (does not establish coverage): {_e(', '.join(r.l0_tier_profiles))}")
    items += [f"gap: {_md_code(g.text)}" + (" — " + "; ".join(_cite(e) for e in g.evidence[:6]) if g.evidence else "")
              for g in r.gaps]
    items += [f'<span class="note">note: {_e(n)}</span>' for n in r.notes]
    head = _e(r.checkpoint + (f"@{r.revision}" if r.revision else ""))
    return f"<h3>{head}</h3><ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def to_html(inv: Inventory) -> str:
    """The whole inventory.html text."""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>aqbench inventory</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>Audio-QA inventory of a TRTMC checkout</h1>",
        f"<p>checkout: {_md_code(source_line(inv))}</p>",
        f"<p>manifests scanned: {inv.manifests_scanned}; checkpoints: {len(inv.rows)}; variants: "
        f"{len(inv.variants)}; every checkpoint accounted for: {'yes' if inv.accounted else 'NO'}</p>",
    ]
    if inv.precision_default is not None:
        parts.append(f"<p>a manifest without <code>precision</code> builds at {_e(inv.precision_default.value)} "
                     f"(TRTMC's default: {_cite(inv.precision_default)})</p>")
    head = "".join(f"<th>{h}</th>" for h in ("checkpoint", "class", "status", "normal profile", "native Task", "gap"))
    body = "".join(_row(r) for r in inv.rows)
    body += "".join(f"<tr><td>{_e(e.file)}</td><td>unknown</td><td>{_status('error')}</td><td>-</td><td>-</td>"
                    f"<td>{_e(e.error)}</td></tr>" for e in inv.errors)
    parts += ["<h2>Checkpoints</h2>", f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
              "<h2>Considered, not in the group</h2>"]
    parts.append("<ul>" + "".join(f"<li><b>{_e(c.checkpoint)}</b> ({_e(c.capability_class)}): {_e(c.reason)} — "
                                  + "; ".join(_cite(e) for e in c.evidence) + "</li>" for c in inv.considered)
                 + "</ul>" if inv.considered else "<p>None.</p>")
    parts.append("<h2>Details</h2>")
    parts += [_details(inv, r) for r in inv.rows]
    if inv.unaccounted:
        parts.append("<h2>Not accounted for</h2><ul>" + "".join(f"<li>{_e(u)}</li>" for u in inv.unaccounted)
                     + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
