"""Credential redaction shared by every writer (journal, aqbench.log, reports, publish): secret-looking names'
values, Authorization headers, credentials by their issuers' shapes and passwords in URLs become `<redacted>`.
Imports only orchestrator.events."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

import msgspec

from orchestrator.events import (
    AnyEvent,
    ClientRecord,
    GpuSampled,
    RequestCorrelated,
    RequestsInFlight,
    RequestUnmatched,
    ResourceSampled,
    ServerRecord,
    VerdictReached,
)

__all__ = ["REDACTED", "Redactor", "is_secret_name", "secret_values"]

REDACTED = "<redacted>"
# A name is secret-looking when one of its parts (split at `_ - .` and camelCase) is one of these:
# `HF_TOKEN`, `--api-key`, `apiKey` are; `tokenizer` and `max_tokens` are not. Shapes: `hf_...`, `sk-...`,
# `ghp_...`, `nvapi-...`, AWS key ids, JWTs, private key blocks (_SHAPE_RE).
_SECRET_PARTS = frozenset({"token", "key", "secret", "password", "passwd", "credential", "credentials",
                           "authorization", "apikey"})
# Shorter values would redact ordinary words; a credential is never this short.
_MIN_VALUE_LEN = 6
# Per-request data events: high rate, and no producer puts argv, env or headers in them.
_DATA_EVENTS = (ClientRecord, ServerRecord, RequestCorrelated, RequestUnmatched, RequestsInFlight,
                ResourceSampled, GpuSampled, VerdictReached)

_ASSIGN_RE = re.compile(r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>["']?\s*[=:]\s*["']?)(?P<val>[^\s"',;&}]+)""")
_FLAG_RE = re.compile(r"""(?P<name>--?[A-Za-z][A-Za-z0-9_-]*)(?P<sep>\s+['"]?)(?P<val>[^\s'"]+)""")
_AUTH_RE = re.compile(r"""(?i)(?P<head>authorization["']?\s*[:=]\s*["']?)(?:(?P<scheme>bearer|basic|token)\s+)?"""
                      r"""(?P<val>[^\s"',}]+)""")
_BEARER_RE = re.compile(r"(?i)\b(?P<head>bearer\s+)(?P<val>[A-Za-z0-9._~+/=-]{8,})")
# Credentials by shape, whatever names them: the issuers' documented prefixes, as whole tokens.
_SHAPE_RE = re.compile(
    r"(?<![A-Za-z0-9_-])(?:hf_[A-Za-z0-9]{16,}|sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}|nvapi-[A-Za-z0-9_-]{16,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}|xox[abprs]-[A-Za-z0-9-]{8,}"
    r"|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,})(?![A-Za-z0-9_])")
_PEM_RE = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)",
                     re.DOTALL)
_URL_PASSWORD_RE = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<cred>[^\s/@:\"'<>]+:[^\s/@\"'<>]+)@")
_SHAPE_HINTS = ("hf_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "nvapi-", "akia", "asia", "agpa", "aida", "aroa", "xox", "eyj", "private key")
# Every rule above needs one of these words: text without them (and without a known value) is skipped.
# Substring tests on the lowered text: a case-insensitive regex alternation is ~30x slower here.
_HINTS = ("token", "key", "secret", "passw", "credential", "authoriz", "bearer")
_HINTS_BYTES = tuple(h.encode() for h in (*_HINTS, *_SHAPE_HINTS, "@"))
_encoder = msgspec.json.Encoder()


def _parts(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.lstrip("-"))
    return [p for p in re.split(r"[_.\-\s]+", spaced.lower()) if p]


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a variable, key or flag name looks like it holds a credential."""
    return any(p in _SECRET_PARTS for p in _parts(name))


def secret_values(env: Mapping[str, str]) -> frozenset[str]:
    """The values of the secret-looking variables of `env` long enough to be credentials."""
    return frozenset(v for k, v in env.items() if is_secret_name(k) and _is_value(v))


def _is_value(value: str) -> bool:
    # A journal written by this module already holds REDACTED where the value was: not a value to hide.
    return len(value) >= _MIN_VALUE_LEN and value != REDACTED


class Redactor:
    """Replaces credentials in text, argv lists, JSON-like data and journal events. Pure and cheap;
    `values` are known secret values (from the environment) replaced wherever they appear."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = frozenset(v for v in values if _is_value(v))
        # Longest first: a value that contains another is replaced whole.
        self._ordered = sorted(self.values, key=len, reverse=True)
        self._ordered_bytes = [v.encode() for v in self._ordered]

    @classmethod
    def from_environ(cls, env: Mapping[str, str] | None = None) -> Redactor:
        """A redactor knowing the secret values of this process's environment (or of `env`)."""
        return cls(secret_values(os.environ if env is None else env))

    def learning(self, values: Iterable[str]) -> Redactor:
        """This redactor plus more known secret values (e.g. `[server] env` of a run's configuration)."""
        more = frozenset(v for v in values if _is_value(v))
        return self if more <= self.values else Redactor(self.values | more)

    def text(self, text: str) -> str:
        """`text` with known secret values, passwords in URLs, credentials by shape, secret assignments,
        secret flags' values, Authorization headers and bearer tokens replaced by REDACTED."""
        for value in self._ordered:
            if value in text:
                text = text.replace(value, REDACTED)
        low = text.lower()
        if "@" in text and "://" in text:
            text = _URL_PASSWORD_RE.sub(lambda m: m["head"] + REDACTED + "@", text)
        if any(h in low for h in _SHAPE_HINTS):
            text = _PEM_RE.sub(REDACTED, text)
            text = _SHAPE_RE.sub(REDACTED, text)
        if not any(h in low for h in _HINTS):
            return text
        text = _AUTH_RE.sub(lambda m: m["head"] + (m["scheme"] + " " if m["scheme"] else "") + REDACTED, text)
        text = _BEARER_RE.sub(lambda m: m["head"] + REDACTED, text)
        text = _ASSIGN_RE.sub(self._assignment, text)
        return _FLAG_RE.sub(self._assignment, text)

    @staticmethod
    def _assignment(m: re.Match[str]) -> str:
        # Authorization headers (with their scheme word) are _AUTH_RE's job.
        if (not is_secret_name(m["name"]) or m["val"] == REDACTED or m["val"].startswith("-")
                or m["name"].lower().endswith("authorization")):
            return m[0]
        return m["name"] + m["sep"] + REDACTED

    def argv(self, argv: list[str]) -> list[str]:
        """argv with the value after a secret-looking flag (`--api-key X`, `--token=X`) redacted."""
        out: list[str] = []
        hide_next = False
        for arg in argv:
            if hide_next and not arg.startswith("-"):
                out.append(REDACTED)
                hide_next = False
                continue
            hide_next = False
            if arg.startswith("-") and is_secret_name(arg.split("=", 1)[0]):
                if "=" in arg:
                    arg = arg.split("=", 1)[0] + "=" + REDACTED
                else:
                    hide_next = True
            out.append(self.text(arg))
        return out

    def data(self, value: object) -> object:
        """JSON-like data with secret-named keys' values, secret flags in string lists and secrets in
        strings redacted; returns `value` itself when nothing changed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out = {k: (REDACTED if isinstance(k, str) and isinstance(v, str) and v and is_secret_name(k)
                       else self.data(v)) for k, v in value.items()}
            return value if out == value else out
        if isinstance(value, list):
            items = self.argv(value) if value and all(isinstance(v, str) for v in value) else \
                [self.data(v) for v in value]
            return value if items == value else items
        return value

    def event(self, event: AnyEvent) -> AnyEvent:
        """The event with credentials redacted (the same object when it holds none). Per-request data
        events are passed through untouched: they never carry argv, env or headers."""
        if isinstance(event, _DATA_EVENTS):
            return event
        # One encode and one scan decide for nearly every event (a log line, a phase) that nothing matches.
        encoded = _encoder.encode(event)
        low = encoded.lower()
        if not any(h in low for h in _HINTS_BYTES) and not any(v in encoded for v in self._ordered_bytes):
            return event
        raw = msgspec.to_builtins(event)
        clean = self.data(raw)
        if clean is raw:
            return event
        return msgspec.convert(clean, type(event))
