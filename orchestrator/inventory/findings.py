"""Gaps a family's own files show for a checkpoint that does not answer audio questions, each cited. Pure."""

from __future__ import annotations

import re

from orchestrator.inventory.families import FamilyFacts
from orchestrator.inventory.records import Evidence, Gap
from orchestrator.inventory.task_names import TAKES_AUDIO, task_class

__all__ = ["NO_AUDIO_PATH", "family_gaps"]

# Classes of checkpoints served without any audio path (text or images only).
NO_AUDIO_PATH = frozenset({"text-only", "vision-language"})

_AUDIO_NAME = ("audio", "speech", "wav", "whisper")
_OUTPUT_NAME = ("code2wav", "vocoder", "talker", "codec", "hift", "decoder", "tts")
_AUDIO_PARAM = re.compile(r"audio|samples|pcm|wave|mel", re.IGNORECASE)
_ENGINE = re.compile(r"[._](plan|engine)$")


def _lines(evidence: list[Evidence]) -> str:
    return ", ".join(dict.fromkeys(ev.field.removeprefix("line ") for ev in evidence))


def _is_audio_input(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _AUDIO_NAME) and not any(w in low for w in _OUTPUT_NAME)


def _unloaded_encoder(facts: FamilyFacts) -> Gap | None:
    code = facts.code
    if not code.build_files or not any(f.endswith((".cpp", ".cc")) for f in code.runtime_files):
        return None  # a gap needs both sides: what is built and what is loaded
    loaded = sorted({str(e.value) for e in code.loaded})
    unloaded = sorted({str(e.value) for e in code.built if _is_audio_input(str(e.value))} - set(loaded))
    if not unloaded:
        return None
    name = unloaded[0]
    built = [e for e in code.built if e.value == name]
    text = (f"audio encoder built but never loaded by the runtime; no audio input reaches the model: "
            f"{built[0].file} writes `{name}` (line {_lines(built)}), but the runtime loads only "
            f"{', '.join(f'`{n}`' for n in loaded) or 'no section'}"
            f" ({code.loaded[0].file if code.loaded else 'runtime'} line {_lines(code.loaded)})")
    entries = code.entries
    if entries and not any(_AUDIO_PARAM.search(params) for _, params, _, _ in entries):
        names = ", ".join(dict.fromkeys(f"{fn}({params}{'' if closed else ', ...'})" for fn, params, closed, _ in entries))
        text += f"; {entries[0][3].file} exposes only {names}, none taking audio"
    return Gap(text=text, summary="audio encoder built but never loaded by the runtime; no audio input reaches it",
               evidence=built + code.audio_plan_structs + code.loaded + [e for *_, e in entries],
               kind="audio-encoder-unloaded")


def _tasks_take_no_audio(facts: FamilyFacts) -> Gap | None:
    if facts.support is None or not facts.support.tasks:
        return None
    tasks = facts.support.tasks
    if any(task_class(t.task) in TAKES_AUDIO for t in tasks):
        return None
    names = ", ".join(f"`{n}`" for n in dict.fromkeys(t.task for t in tasks))
    evidence = [Evidence(claim="task_declared", file=t.file, field=f"line {t.line}", value=t.task) for t in tasks]
    return Gap(text=f"its family declares only {names} ({tasks[0].file} line {_lines(evidence)}): no Task that "
                    f"takes audio", summary=f"its family declares only {names}: no Task takes audio",
               evidence=evidence, kind="tasks-take-no-audio")


def _runtime_takes_no_audio(facts: FamilyFacts) -> Gap | None:
    code = facts.code
    if not code.loaded:
        return None  # sections loaded under computed names: the audit cannot tell what the runtime loads
    if any(_is_audio_input(str(e.value)) for e in code.loaded):
        return None
    if any(task_class(str(e.value)) in TAKES_AUDIO for e in [*code.bound, *code.implemented]):
        return None
    # Engines say what runs; configs and tokenizers loaded beside them do not.
    shown = [e for e in code.loaded if _ENGINE.search(str(e.value))] or code.loaded
    loaded = ", ".join(f"`{n}`" for n in dict.fromkeys(str(e.value) for e in shown))
    return Gap(text=f"its runtime loads only {loaded} ({shown[0].file} line {_lines(shown)}) and binds no Task that "
                    f"takes audio", summary=f"its runtime loads only {loaded}, none taking audio",
               evidence=list(shown), kind="runtime-takes-no-audio")


def _readme_says_no_audio(facts: FamilyFacts) -> Gap | None:
    said = [e for e in facts.readme.audio_sentences if e.claim == "readme:audio-not-exposed"]
    if not said:
        return None
    quote = min(said, key=lambda e: len(str(e.value)))
    return Gap(text=f"its README says: \"{quote.value}\" ({quote.file} {quote.field})",
               summary="its README says audio is not exposed", evidence=said[:3], kind="readme-audio-not-exposed")


def family_gaps(facts: FamilyFacts | None, cls: str) -> list[Gap]:
    """The gaps one family's files show for a row of class `cls` (none for an audio-QA row).

    Rules, in the order a reader needs them:
    1. `audio-encoder-unloaded`: the build writes a section whose name speaks of audio input (not a speech codec or
       vocoder) that the runtime never loads; the older layout's `pipeline.h` entry points are cited when none takes
       audio.
    2. `readme-audio-not-exposed`: a family README says audio is not there (a sentence about audio with not, no,
       lacks, without or never).
    3. `tasks-take-no-audio`: support.py declares Tasks, and none of them takes audio.
    4. `runtime-takes-no-audio`: the runtime loads named sections, none an audio input, and binds or implements no
       Task that takes audio. Rules 2-4 answer "why is there no audio input?" for a checkpoint served on text or
       images (text-only, vision-language); for a speech, music or video generator its class already says it.
    """
    if facts is None or cls == "audio-qa":
        return []
    rules = [_unloaded_encoder]
    if cls in NO_AUDIO_PATH:
        rules += [_readme_says_no_audio, _tasks_take_no_audio, _runtime_takes_no_audio]
    return [gap for rule in rules if (gap := rule(facts)) is not None]
