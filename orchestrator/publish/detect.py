"""The final scan's own detectors: what must never be posted, found by shape and by this machine's facts,
independently of the scrubber (no list or pattern is shared with redaction.py or private.py, so a gap in
one is not a gap in both). Pure once built; reports kinds and positions, never the secret itself.
"""

from __future__ import annotations

import getpass
import math
import os
import pwd
import re
import socket
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec
import psutil

__all__ = ["Detected", "Detectors", "MachineFacts", "machine_facts", "shannon_bits"]

# Token shapes by prefix: the issuers' documented formats, matched only as whole tokens.
_TOKEN_SHAPES: tuple[tuple[str, str], ...] = (
    ("Hugging Face token", r"hf_[A-Za-z0-9]{20,}"),
    ("OpenAI-style key", r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{16,}"),
    ("GitHub token", r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("NVIDIA API key", r"nvapi-[A-Za-z0-9_-]{16,}"),
    ("AWS access key id", r"(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}"),
    ("Slack token", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("JWT", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)
_TOKENS = re.compile("|".join(f"(?P<t{i}>(?<![A-Za-z0-9_-]){p}(?![A-Za-z0-9_]))"
                              for i, (_, p) in enumerate(_TOKEN_SHAPES)))
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
# scheme://user:password@host; a placeholder in the password (<...>) is what redaction leaves.
_URL_CREDENTIALS = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/@:<>\"']+:(?!<)[^\s/@<>\"']+@", re.IGNORECASE)
_BEARER = re.compile(r"(?i)\b(?:bearer|basic|token)\s+(?!<)([A-Za-z0-9._~+/=-]{12,})")
# NAME=value, "name": "value", --name value: a credential-named setting with a value other than a placeholder.
# NAME=value, "name": "value", --name value: a credential-named setting with a value other than a placeholder.
_ASSIGNMENT = re.compile(r"""(?P<name>[A-Za-z_][\w.-]*)["']?\s*[=:]\s*["']?(?!-)(?P<val>[^\s"',;&}<>\]]{6,})""")
_FLAG_VALUE = re.compile(r"""(?<![\w-])(?P<name>--?[A-Za-z][\w-]*)(?:=|\s+)["']?(?!-)(?P<val>[^\s"',;&}<>\]]{6,})""")
# An Authorization header's scheme word: the credential after it is _BEARER's to judge.
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
_CREDENTIAL_PARTS = frozenset({"password", "passwd", "passphrase", "secret", "token", "apikey", "credential",
                               "credentials", "authorization", "privatekey", "pat"})
_CREDENTIAL_PAIRS = frozenset({("api", "key"), ("access", "key"), ("secret", "key"), ("private", "key"),
                               ("client", "secret"), ("session", "key"), ("auth", "token"), ("signing", "key")})
# A name that describes a credential rather than holding one: `token_source`, `token_count`, `secret_file`.
_DESCRIBING = frozenset({"source", "count", "len", "length", "id", "ids", "type", "kind", "scope", "limit", "budget",
                         "file", "path", "dir", "name", "env", "var", "header", "present", "set", "used"})
# Candidate strings for the entropy test: long runs of key-alphabet characters.
_RUN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_=-]{24,}(?![A-Za-z0-9+/_=-])")
_HEX_OR_UUID = re.compile(r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-fA-F]+)")
_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w.]*\d)")
# Home, scratch and temporary folders: where a path names a person, a site or a machine's scratch space.
_HOME_PATH = re.compile(r"(?<![\w.<>~-])(?:/home/[^/\s\"'<>]+|/Users/[^/\s\"'<>]+|/root(?=[/\s\"',;:)\]}]|$)|~[A-Za-z][\w-]*)")
_SCRATCH_PATH = re.compile(r"(?<![\w.<>~-])/(?:scratch|lustre|gpfs|nfs|fsx|beegfs|mnt|cluster|shared|p/project)"
                           r"(?=/|[\s\"',;:)\]}]|$)")
_TMP_PATH = re.compile(r"(?<![\w.<>~-])/(?:tmp|var/tmp|dev/shm|private/var/folders)(?=/|[\s\"',;:)\]}]|$)")
# Bits per character of a random token over a 64-symbol alphabet is 6; English-like identifiers sit near 3.5.
_ENTROPY_BITS = 4.3


def shannon_bits(text: str) -> float:
    """Shannon entropy of `text` in bits per character (0 for an empty string)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


class Detected(msgspec.Struct, frozen=True, kw_only=True):
    """One finding on one line: its kind and the column where it starts (the text itself is never kept)."""

    line: int
    column: int
    kind: str


class MachineFacts(msgspec.Struct, frozen=True, kw_only=True):
    """This machine's names as the scan sees them: host names (short and full), its addresses, local user
    names, and its temporary folders."""

    hosts: list[str] = []
    addresses: list[str] = []
    users: list[str] = []
    tmp: list[str] = []


def _login_users() -> set[str]:
    users = set()
    for entry in pwd.getpwall():
        shell = entry.pw_shell.rsplit("/", 1)[-1]
        # Service accounts (no login shell) are not people; root is, when it is the one running.
        if (entry.pw_uid >= 1000 and entry.pw_name != "nobody" and shell not in ("nologin", "false")):
            users.add(entry.pw_name)
    return users


def _interface_addresses() -> set[str]:
    """Every IPv4 and IPv6 address of this machine's network interfaces (zone ids dropped): a name lookup
    misses those the host name does not resolve to."""
    out: set[str] = set()
    for addrs in psutil.net_if_addrs().values():
        out.update(a.address.split("%", 1)[0] for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6))
    return out


def machine_facts(extra_hosts: Iterable[str] = (), extra_users: Iterable[str] = ()) -> MachineFacts:
    """Read this machine's host names and addresses (socket, network interfaces), login users (passwd) and
    temporary folders. Blocks briefly (name lookups)."""
    hosts = {socket.gethostname(), socket.getfqdn(), *extra_hosts}
    addresses: set[str] = set()
    for name in list(hosts):
        try:
            canonical, aliases, addrs = socket.gethostbyname_ex(name)
        except OSError:
            continue
        hosts.update([canonical, *aliases])
        addresses.update(addrs)
    addresses |= _interface_addresses()
    hosts |= {h.split(".", 1)[0] for h in hosts}
    users = {getpass.getuser(), os.environ.get("USER", ""), os.environ.get("LOGNAME", ""), Path.home().name,
             *_login_users(), *extra_users}
    tmp = {tempfile.gettempdir(), os.environ.get("TMPDIR", "")}
    loopback = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
    return MachineFacts(
        hosts=sorted(h for h in hosts if h and h.lower() not in loopback and not _IPV4.fullmatch(h)),
        addresses=sorted(a for a in addresses if a and not a.startswith("127.") and a not in ("0.0.0.0", "::", "::1")),
        users=sorted(u for u in users if len(u) >= 2),
        tmp=sorted(t.rstrip("/") for t in tmp if t and t.rstrip("/") not in ("", "/tmp")),
    )


def _credentials(text: str) -> Iterator[tuple[str, int]]:
    """Credentials by shape, by the setting that names them, and by entropy: (kind, column)."""
    for m in _TOKENS.finditer(text):
        yield next(_TOKEN_SHAPES[int(k[1:])][0] for k, v in m.groupdict().items() if v is not None), m.start()
    for pattern, kind in ((_PRIVATE_KEY, "private key"), (_URL_CREDENTIALS, "URL with credentials")):
        if m2 := pattern.search(text):
            yield kind, m2.start()
    for m in _BEARER.finditer(text):
        yield "bearer or basic credential", m.start()
    for setting in (_ASSIGNMENT, _FLAG_VALUE):
        for m in setting.finditer(text):
            if m["val"].lower() not in _SCHEMES and not m["val"].startswith(("$", "{")) and _holds_credential(m["name"]):
                yield "credential setting", m.start("val")
    for m in _RUN.finditer(text):
        run = m[0].strip("=-_/+")
        if _HEX_OR_UUID.fullmatch(run) or len(run) < 24:
            continue
        classes = sum((any(c.islower() for c in run), any(c.isupper() for c in run), any(c.isdigit() for c in run)))
        if classes == 3 and shannon_bits(run) >= _ENTROPY_BITS:
            yield "high-entropy token", m.start()


def _places(text: str) -> Iterator[tuple[str, int]]:
    """Email addresses and home, scratch and temporary paths: (kind, column)."""
    if m := _EMAIL.search(text):
        yield "email address", m.start()
    for shape, kind in ((_HOME_PATH, "home path"), (_SCRATCH_PATH, "scratch path"), (_TMP_PATH, "temporary path")):
        if m := shape.search(text):
            yield kind, m.start()


def _holds_credential(name: str) -> bool:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.lstrip("-"))
    parts = [p for p in re.split(r"[_.\-]+", spaced.lower()) if p]
    if not parts or parts[-1] in _DESCRIBING:
        return False
    return any(p in _CREDENTIAL_PARTS for p in parts) or any(pair in _CREDENTIAL_PAIRS for pair in zip(parts, parts[1:], strict=False))


def _words(words: Iterable[str]) -> re.Pattern[str] | None:
    ordered = sorted({w for w in words if w}, key=len, reverse=True)
    if not ordered:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ordered)) + r")(?![\w-])", re.IGNORECASE)


def _private_ipv4(m: re.Match[str], own: frozenset[str]) -> bool:
    octets = [int(g) for g in m.groups()]
    if any(o > 255 for o in octets):
        return False
    a, b = octets[0], octets[1]
    return (m[0] in own or a == 10 or (a == 172 and 16 <= b <= 31) or (a == 192 and b == 168)
            or (a == 169 and b == 254) or (a == 100 and 64 <= b <= 127))


class Detectors:
    """Every detector over one line of text; `known` are exact strings (secret values from the environment
    and configuration) that must not appear either."""

    def __init__(self, machine: MachineFacts, known: Iterable[str] = ()) -> None:
        self._hosts = _words(machine.hosts)
        self._users = _words(machine.users)
        self._own = frozenset(machine.addresses)
        # IPv6 addresses as whole literals (IPv4 ones are matched by _IPV4 and looked up in _own).
        six = sorted({a.lower() for a in machine.addresses if ":" in a}, key=len, reverse=True)
        self._own6 = re.compile(r"(?<![0-9A-Fa-f:])(?:" + "|".join(map(re.escape, six)) + r")(?![0-9A-Fa-f:])",
                                re.IGNORECASE) if six else None
        self._tmp = _words(machine.tmp) if machine.tmp else None
        self._known = sorted({k for k in known if len(k) >= 6}, key=len, reverse=True)

    def line(self, text: str, lineno: int) -> list[Detected]:
        """Every kind found on this line, once per kind (the leftmost), in column order."""
        found: dict[str, int] = {}
        for kind, column in (*_credentials(text), *self._machine(text), *_places(text)):
            if kind not in found or column < found[kind]:
                found[kind] = column
        return [Detected(line=lineno, column=col + 1, kind=kind) for kind, col in sorted(found.items(), key=lambda kv: kv[1])]

    def _machine(self, text: str) -> Iterator[tuple[str, int]]:
        """This machine's names and addresses, and the known secret values."""
        for pattern, kind in ((self._hosts, "host name"), (self._users, "user name"), (self._tmp, "temporary path")):
            if pattern is not None and (m := pattern.search(text)):
                yield kind, m.start()
        for m in _IPV4.finditer(text):
            if _private_ipv4(m, self._own):
                yield "IP address", m.start()
        if self._own6 is not None and ":" in text and (m6 := self._own6.search(text)):
            yield "IP address", m6.start()
        for value in self._known:
            if (col := text.find(value)) >= 0:
                yield "known secret value", col
                break

    def text(self, text: str) -> list[Detected]:
        """Every finding of a whole text, line by line."""
        out: list[Detected] = []
        for n, line in enumerate(text.splitlines(), 1):
            out += self.line(line, n)
        return out
