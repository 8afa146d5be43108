"""Private details to placeholders for `aqbench publish`: paths under named roots, host and user names, addresses,
ports, environment values, tokens and credentials. Pure once built; reads no files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import msgspec

from orchestrator.events import AnyEvent
from orchestrator.spine.redaction import REDACTED, Redactor, is_secret_name

__all__ = ["FS_TOPS", "PrivateFacts", "Scrubber", "ipv4_private", "word_re"]

# First segments that make `/x/...` a filesystem path rather than an HTTP route (`/v1/models`).
# What is private: paths relative to named roots (`<run-dir>`, `<venv>`, `<checkout>`, `<bundle-dir>`, `<home>`,
# `<tmp>`, ...), host and user names, email addresses, non-loopback IPs, loopback ports, environment values outside an
# allow-list, high-entropy tokens and credentials (through orchestrator.spine.redaction.Redactor). `PrivateFacts` says
# what is private; `Scrubber` replaces it; the scan (scan.py) checks the same facts.
FS_TOPS = frozenset({
    "home", "root", "tmp", "var", "usr", "opt", "etc", "mnt", "media", "srv", "data", "work", "scratch",
    "lustre", "nfs", "gpfs", "proj", "projects", "Users", "private", "Volumes", "run", "dev", "proc", "sys",
    "models", "workspace", "workspaces", "code", "build", "lib", "lib64", "bin", "sbin", "snap", "nix",
    "cache", "datasets", "checkpoints", "shared", "net", "export", "storage",
})
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w.]*\d)")
_LOOPBACK_PORT = re.compile(r"(?P<host>\b127(?:\.\d{1,3}){3}|\blocalhost|\[::1\]|\b0\.0\.0\.0|<host>):(?P<port>\d{2,5})\b")
_PORT_FLAG = re.compile(r"(?P<flag>--port[= ]['\"]?)(?P<port>\d{2,5})\b")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
# Random-looking runs of a key alphabet (all of lower, upper and digits, 20+ characters, over 4 bits a
# character): what an unprefixed API key looks like. Hex digests and uuids are identities, not secrets.
_RANDOM_RUN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_=-]{20,}(?![A-Za-z0-9+/_=-])")
_HEX_ID = re.compile(r"[0-9a-fA-F-]+")
_RANDOM_BITS = 4.0
# Folders outside every named root that still name a person or a site: anyone's home becomes `<home>`; a
# shared or scratch file system keeps only the last part, as a temporary folder does.
_ANY_HOME = re.compile(r"(?<![\w.<>~-])(?:/home/[^/\s\"'<>]+|/Users/[^/\s\"'<>]+|/root(?=[/\s\"',;:)\]}]|$))")
_SHARED_FS = re.compile(r"(?<![\w.<>~-])/(?:scratch|lustre|gpfs|nfs|fsx|beegfs|mnt|cluster|shared)"
                        r"(?P<rest>(?:/[^/\s\"'`,;:)\]}<>|]+)*)")
_ENV_ASSIGN = re.compile(r"(?<![\w./-])(?P<name>[A-Z][A-Z0-9_]*)=(?P<q>['\"]?)(?P<val>[^\s'\"]*)(?P=q)")


def ipv4_private(match: re.Match[str]) -> bool:
    """True for an IPv4 address that is neither loopback nor the unspecified 0.0.0.0."""
    octets = [int(g) for g in match.groups()]
    if any(o > 255 for o in octets):
        return False
    return octets[0] != 127 and octets != [0, 0, 0, 0]


def _bits(text: str) -> float:
    n = len(text)
    return -sum(text.count(c) / n * math.log2(text.count(c) / n) for c in set(text))


def _random(m: re.Match[str]) -> str:
    run = m[0]
    if _HEX_ID.fullmatch(run) or not (any(c.islower() for c in run) and any(c.isupper() for c in run)
                                      and any(c.isdigit() for c in run)):
        return run
    return REDACTED if _bits(run) >= _RANDOM_BITS else run


def word_re(words: Iterable[str]) -> re.Pattern[str] | None:
    """A case-insensitive pattern matching any of `words` as a whole name (not inside a longer name)."""
    words = sorted({w for w in words if w}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w-])", re.IGNORECASE)


class PrivateFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What must not be published: `roots` maps placeholder -> folders (most specific wins); `tmp` folders
    are dropped down to their last part; hosts, users and other names become `<host>`, `<user>`, `<name>`."""

    roots: dict[str, list[str]] = {}
    tmp: list[str] = []
    hosts: list[str] = []
    users: list[str] = []
    names: list[str] = []
    # This machine's own addresses (IPv4 and IPv6): `<ip>` wherever they appear, public ones included.
    addresses: list[str] = []
    secret_values: list[str] = []
    allowed_env: list[str] = []


class Scrubber:
    """Applies PrivateFacts to text and JSON-like data. Credentials first, then paths (longest root
    first, so `<run-dir>` wins over `<tmp>`), then names, addresses, ports and environment values."""

    def __init__(self, facts: PrivateFacts) -> None:
        self.facts = facts
        self.redactor = Redactor(facts.secret_values)
        pairs = [(path.rstrip("/") or "/", f"<{name}>") for name, paths in facts.roots.items() for path in paths]
        pairs += [(path.rstrip("/"), "<tmp>") for path in facts.tmp]
        pairs = [(p, n) for p, n in pairs if len(p) > 1]
        self._roots = sorted(set(pairs), key=lambda pn: len(pn[0]), reverse=True)
        self._tmp = {p.rstrip("/") for p in facts.tmp}
        end = r"(?P<rest>(?:/[^\s\"'`,;:)\]}<>|]*)?)(?![\w.-])"
        self._root_re = re.compile("|".join(f"(?P<r{i}>{re.escape(p)}){end.replace('rest', f'rest{i}')}"
                                            for i, (p, _) in enumerate(self._roots))) if self._roots else None
        self._hosts = word_re(facts.hosts)
        self._users = word_re(facts.users)
        self._names = word_re(facts.names)
        own = sorted({a for a in facts.addresses if a}, key=len, reverse=True)
        self._addresses = re.compile(r"(?<![\w.:])(?:" + "|".join(map(re.escape, own)) + r")(?![\w:]|\.\d)",
                                     re.IGNORECASE) if own else None
        self._allowed = frozenset(facts.allowed_env)

    def _root(self, m: re.Match[str]) -> str:
        i = next(int(k[1:]) for k, v in m.groupdict().items() if v is not None and k.startswith("r")
                 and not k.startswith("rest"))
        path, placeholder = self._roots[i]
        rest = m[f"rest{i}"] or ""
        if path in self._tmp:
            # Temporary folders go: keep only the last part, which names what it was.
            last = rest.rstrip("/").rsplit("/", 1)[-1]
            return placeholder + (f"/{last}" if last else "")
        return placeholder + rest

    def text(self, text: str) -> str:
        """`text` with every private detail replaced by its placeholder."""
        text = self.redactor.text(text)
        if "@" in text:
            text = _EMAIL.sub("<email>", text)
        text = _RANDOM_RUN.sub(_random, text)
        if self._root_re is not None and "/" in text:
            text = self._root_re.sub(self._root, text)
        if "/" in text:
            text = _ANY_HOME.sub("<home>", text)
            text = _SHARED_FS.sub(lambda m: "<scratch>" + ("/" + m["rest"].rsplit("/", 1)[-1] if m["rest"] else ""), text)
        for pattern, placeholder in ((self._hosts, "<host>"), (self._users, "<user>"), (self._names, "<name>")):
            if pattern is not None:
                text = pattern.sub(placeholder, text)
        if self._addresses is not None:
            text = self._addresses.sub("<ip>", text)
        text = _IPV4.sub(lambda m: "<ip>" if ipv4_private(m) else m[0], text)
        text = _LOOPBACK_PORT.sub(lambda m: m["host"] + ":<port>", text)
        text = _PORT_FLAG.sub(lambda m: m["flag"] + "<port>", text)
        return _ENV_ASSIGN.sub(self._env, text)

    def _env(self, m: re.Match[str]) -> str:
        if m["name"] in self._allowed or m["val"] in ("<env>", REDACTED):
            return m[0]
        return f"{m['name']}=<env>"

    def data(self, value: object, key: str = "") -> object:
        """JSON-like data scrubbed: strings through `text`, `env` mappings keep allowed values only,
        secret-named keys are redacted, ports are dropped."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if key == "env":
                return {k: (self.text(v) if k in self._allowed else "<env>") for k, v in value.items()}
            return {self.text(k): (REDACTED if is_secret_name(k) and isinstance(v, str) and v else
                                   "<port>" if k == "port" and isinstance(v, int) and not isinstance(v, bool) else
                                   self.data(v, k)) for k, v in value.items()}
        if isinstance(value, list):
            if value and all(isinstance(v, str) for v in value):
                return [self.text(v) for v in self.redactor.argv(value)]
            return [self.data(v, key) for v in value]
        return value

    def event(self, event: AnyEvent) -> AnyEvent:
        """The journal event with every string (keys included) scrubbed and numbers kept, so that the copy
        is still a journal `aqbench report` reads. Raises ValueError when a scrubbed value no longer fits
        its field (never expected: placeholders replace strings with strings)."""
        raw = msgspec.to_builtins(event)
        clean = self._strings(raw)
        try:
            return msgspec.convert(clean, type(event))
        except msgspec.ValidationError as exc:
            raise ValueError(f"{type(event).__name__} seq {event.seq}: scrubbed event no longer valid: {exc}") from None

    def _strings(self, value: object, key: str = "") -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if key == "env":
                return {k: (self.text(v) if k in self._allowed else "<env>") if isinstance(v, str) else v
                        for k, v in value.items()}
            return {self.text(k) if isinstance(k, str) else k:
                    (REDACTED if isinstance(k, str) and is_secret_name(k) and isinstance(v, str) and v
                     else self._strings(v, k if isinstance(k, str) else "")) for k, v in value.items()}
        if isinstance(value, list):
            if value and all(isinstance(v, str) for v in value):
                return [self.text(v) for v in self.redactor.argv(value)]
            return [self._strings(v, key) for v in value]
        return value
