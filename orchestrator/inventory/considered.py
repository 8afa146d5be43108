"""Checkpoints the audit looked at and left out of the audio group: audio appears in what a manifest
makes or ships (a video with a soundtrack, an audio asset, a description), never in what the model is fed.
Listing them, each with its reason and the field that mentions audio, shows the audit was exhaustive."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import msgspec

from orchestrator.inventory.classify import words
from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import Considered, Evidence

__all__ = ["considered"]

_AUDIO_WORDS = {"audio", "speech", "voice", "sound", "soundtrack", "t2va", "tts", "asr"}
_AUDIO_FILE = re.compile(r"\.(wav|flac|mp3|ogg|opus|m4a)$", re.IGNORECASE)
_DEPTH = 4
_MOST = 3  # citations per checkpoint: enough to check, few enough to read


def _strings(value: object, field: str, depth: int) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield field, value
    elif depth > 0 and isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{field}.{k}" if field else k, depth - 1)
    elif depth > 0 and isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{field}[{i}]", depth - 1)


def _mentions(p: Profile) -> list[Evidence]:
    try:
        data = msgspec.json.decode(p.doc.data)
    except msgspec.DecodeError:
        return []
    out = []
    for field, text in _strings(data, "", _DEPTH):
        if words(text) & _AUDIO_WORDS or _AUDIO_FILE.search(text):
            out.append(Evidence(claim="audio_mentioned", file=p.doc.path, field=field, value=text[:200]))
    return out


def considered(profiles: Sequence[Profile], keep: set[str]) -> list[Considered]:
    """One entry per checkpoint outside the group (and not in `keep`, the lower-cased ids already rows)
    whose manifests mention audio anywhere, with the first fields that do."""
    out: dict[str, Considered] = {}
    for p in sorted(profiles, key=lambda p: (p.hf_id.lower(), p.name)):
        key = p.hf_id.lower()
        if p.in_group or key in keep or key in out:
            continue
        mentions = _mentions(p)
        if not mentions:
            continue
        first = mentions[0]
        reason = (f"audio appears only in what it makes or ships ({first.field}: {first.value!s:.80}), never as "
                  f"an input it is fed; its class is {p.capability}: {p.capability_why}")
        out[key] = Considered(checkpoint=p.hf_id, profile=p.name, file=p.doc.path, capability_class=p.capability,
                              reason=reason, evidence=mentions[:_MOST])
    return list(out.values())
