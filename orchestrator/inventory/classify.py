"""Classify a parsed manifest: whether it joins the audio-conditioned group, then its native class. Both read
only the Profile's task, runtime, contract, test-type, name and input evidence."""

from __future__ import annotations

import re
from collections.abc import Iterable

from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import Evidence
from orchestrator.inventory.task_names import speaks_of_audio, task_class

__all__ = ["words", "has_part", "select_group", "classify_profile", "CLASS_WHY"]

# Why a class is not audio QA (or is), as a row's gap says it.
CLASS_WHY: dict[str, str] = {
    "audio-qa": "ordered audio and text question parts -> text",
    "transcription-only": "transcription only: no question input",
    "voice-cloning": ("voice cloning: text and a reference voice clip in, speech in that voice out; the clip is "
                      "not a question and no text answer comes out"),
    "speech-output-only": "speech output only: text in, audio out; no audio input",
    "music-generation": "music generation: text in, music out; no audio input",
    "audio-video-generation": "video with a soundtrack generated from text: no audio input",
}

_AUDIO_QA_PARTS = ("audio_text_to_text", "audio_qa", "audio_question", "audio_answer")
_DIALOGUE_PARTS = ("speech_to_speech", "dialogue", "duplex", "voicechat", "voice_chat", "speech_response",
                   "spoken", "speech_session")
_TRANSCRIBE_PARTS = ("transcri", "speech_to_text", "speech_translation", "language_identification")
_TRANSCRIBE_TOKENS = {"asr", "stt"}
_SPEECH_OUT_PARTS = ("text_to_speech", "text_to_audio", "audio_generation", "speech_generation", "talker",
                     "speech_output", "audio_output")
_SPEECH_OUT_TOKENS = {"tts"}
_AUDIO_VIDEO_PARTS = ("audio_video", "t2va", "video_and_audio")
_MUSIC = re.compile(r"music", re.IGNORECASE)
_VISION_PARTS = ("vision", "image", "video", "visual")
_VISION_TOKENS = {"vl", "vlm", "vqa"}
_GROUP_PARTS = ("audio", "speech", "transcri", "omni", "voice", "dialog", "wav")
_GROUP_TOKENS = {"asr", "tts", "stt", "s2s"}

_SPLIT = re.compile(r"[-_.\s/]+")


def words(text: str) -> set[str]:
    return {t for t in _SPLIT.split(text.lower()) if t}


def has_part(text: str, parts: Iterable[str], tokens: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
    low = text.lower()
    return any(p in low for p in parts) or bool(words(low) & tokens)


def select_group(p: Profile) -> None:
    """Audio-conditioned group: task, runtime, contracts or test types speak of audio, or audio inputs, or the
    checkpoint's own name does (an omni or speech model whose manifest runs it on text only)."""
    for claim, text in (("task_strategy", p.task), ("runtime_strategy", p.runtime)):
        if text and has_part(text, _GROUP_PARTS, _GROUP_TOKENS):
            p.in_group, p.group_reason = True, p.evidence[claim][0]
            return
    for claim in ("user_contract", "test_type", "audio_input"):
        for ev in p.evidence.get(claim, []):
            if claim == "audio_input" or has_part(str(ev.value), _GROUP_PARTS, _GROUP_TOKENS):
                p.in_group, p.group_reason = True, ev
                return
    for ev in p.evidence.get("checkpoint", []):
        if has_part(str(ev.value).rsplit("/", 1)[-1], _GROUP_PARTS, _GROUP_TOKENS):
            p.in_group, p.group_reason = True, ev
            return


def _dialogue_why(p: Profile) -> str:
    steering = p.evidence.get("system_prompt", [])
    if steering:
        return (f"spoken dialogue: audio in, speech and text out; no text question (text steers it only through a "
                f"system prompt, {steering[0].field})")
    return "spoken dialogue: audio in, speech and text out; no text question: its testcases carry no text part"


def _music(p: Profile) -> list[Evidence]:
    return [ev for claim in ("checkpoint", "profile", "family") for ev in p.evidence.get(claim, [])
            if _MUSIC.search(str(ev.value))][:1]


def _by_task(p: Profile) -> bool:
    """Decide by the manifest's Task when it is listed, or flag an unlisted audio Task; False when neither."""
    task_ev = p.evidence.get("task_strategy", [])[:1]
    if not task_ev:
        return False
    name = str(task_ev[0].value)
    cls = task_class(name)
    audio = p.evidence.get("audio_input", [])[:1]
    if cls is None:
        if not speaks_of_audio(name):
            return False
        p.capability, p.capability_evidence = "unknown", task_ev + audio
        p.capability_why = (f"Task `{name}` speaks of audio but is not in the inventory's Task list: a person must "
                            f"classify it (then add it to orchestrator/inventory/task_names.py)")
        return True
    if cls == "speech-output-only" and (music := _music(p)):
        cls, task_ev = "music-generation", task_ev + music
    if cls == "speech-output-only" and audio:
        p.capability, p.capability_evidence = "unknown", task_ev + audio
        p.capability_why = "speech output declared but the testcases also feed audio"
        return True
    prompt = p.evidence.get("text_prompt", [])[:1] if cls == "audio-qa" else []
    p.capability, p.capability_evidence = cls, task_ev + audio + prompt
    p.capability_why = _dialogue_why(p) if cls == "spoken-dialogue" else CLASS_WHY[cls]
    return True


# A class, the evidence for it, and why (as a row's gap says it).
_Class = tuple[str, list[Evidence], str]


# The manifest's Task decides first when it is in the Task list (`task_names`); a Task not listed that speaks
# of audio makes the class `unknown`, flagged for a person; otherwise the other fields decide by their words.
def classify_profile(p: Profile) -> None:
    """Native capability class from the manifest's task, runtime, contracts and testcase inputs."""
    named = [ev for claim in ("task_strategy", "runtime_strategy", "user_contract", "test_type")
             for ev in p.evidence.get(claim, [])]
    if _by_task(p):
        return
    audio = p.evidence.get("audio_input", [])[:1]
    prompt = p.evidence.get("text_prompt", [])[:1]
    p.capability, p.capability_evidence, p.capability_why = (
        _by_words(p, named, audio, prompt) or _by_inputs(p, named, audio, prompt))


def _first(named: list[Evidence], parts: Iterable[str], tokens: set[str] = frozenset()) -> list[Evidence]:  # type: ignore[assignment]
    return [ev for ev in named if has_part(str(ev.value), parts, tokens)][:2]


def _by_words(p: Profile, named: list[Evidence], audio: list[Evidence], prompt: list[Evidence]) -> _Class | None:
    """The class the task, runtime, contract and test-type words name, if they name one."""
    ids = [ev for ev in named if task_class(str(ev.value)) == "audio-qa"] or _first(named, _AUDIO_QA_PARTS)
    if ids:
        return "audio-qa", ids + audio + prompt, "ordered audio and text question parts -> text"
    if ev := _first(named, _DIALOGUE_PARTS):
        return "spoken-dialogue", ev + audio, _dialogue_why(p)
    if ev := _first(named, _TRANSCRIBE_PARTS, _TRANSCRIBE_TOKENS):
        return "transcription-only", ev + audio, CLASS_WHY["transcription-only"]
    if ev := _first(named, _AUDIO_VIDEO_PARTS):
        return "audio-video-generation", ev, CLASS_WHY["audio-video-generation"]
    if ev := _first(named, _SPEECH_OUT_PARTS, _SPEECH_OUT_TOKENS):
        if audio:
            return "unknown", ev + audio, "speech output declared but the testcases also feed audio"
        if music := _music(p):
            return "music-generation", ev + music, CLASS_WHY["music-generation"]
        return "speech-output-only", ev, CLASS_WHY["speech-output-only"]
    return None


def _by_inputs(p: Profile, named: list[Evidence], audio: list[Evidence], prompt: list[Evidence]) -> _Class:
    """The class the testcases' inputs and the contracts show, when no words named one."""
    if audio and prompt:
        text_contracts = [ev for ev in p.evidence.get("user_contract", [])]
        if text_contracts:
            return ("audio-qa", audio + prompt + text_contracts[:1],
                    "audio input and a text question with a text answer contract")
        return "unknown", audio + prompt, "audio and a text prompt, but no contract says what comes out"
    if audio:
        return "unknown", audio, "audio input, but no task or contract this audit recognises"
    vision = _first(named, _VISION_PARTS, _VISION_TOKENS) + p.evidence.get("image_input", [])[:1]
    if vision:
        return "vision-language", vision, "audio not exposed by this TRTMC family: image and text only"
    text = [ev for ev in named if ev.claim in ("task_strategy", "runtime_strategy")][:2]
    if prompt or text:
        return "text-only", text + prompt, "text only: no audio input exposed by this TRTMC family"
    return "unknown", named[:2], "no task, contract or input this audit recognises"
