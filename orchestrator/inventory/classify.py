"""Classify a parsed manifest: whether it joins the audio-conditioned group, then its native class.

Both read only the Profile's task, runtime, contract, test-type and input evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import Evidence

__all__ = ["words", "has_part", "select_group", "classify_profile"]

_AUDIO_QA_IDS = {"audio_text_to_text", "image_audio_text_to_text", "audio_video_text_to_text"}
_AUDIO_QA_PARTS = ("audio_text_to_text", "audio_qa", "audio_question", "audio_answer")
_DIALOGUE_PARTS = ("speech_to_speech", "dialogue", "duplex", "voicechat", "voice_chat", "speech_response",
                   "spoken", "speech_session")
_TRANSCRIBE_PARTS = ("transcri", "speech_to_text", "speech_translation", "language_identification")
_TRANSCRIBE_TOKENS = {"asr", "stt"}
_SPEECH_OUT_PARTS = ("text_to_speech", "text_to_audio", "audio_generation", "speech_generation", "talker",
                     "speech_output", "audio_output")
_SPEECH_OUT_TOKENS = {"tts"}
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
    """Audio-conditioned group: task, runtime, contracts or test types speak of audio, or audio inputs."""
    for claim, text in (("task_strategy", p.task), ("runtime_strategy", p.runtime)):
        if text and has_part(text, _GROUP_PARTS, _GROUP_TOKENS):
            p.in_group, p.group_reason = True, p.evidence[claim][0]
            return
    for claim in ("user_contract", "test_type", "audio_input"):
        for ev in p.evidence.get(claim, []):
            if claim == "audio_input" or has_part(str(ev.value), _GROUP_PARTS, _GROUP_TOKENS):
                p.in_group, p.group_reason = True, ev
                return


def classify_profile(p: Profile) -> None:
    """Native capability class from the manifest's task, runtime, contracts and testcase inputs."""
    named = [ev for claim in ("task_strategy", "runtime_strategy", "user_contract", "test_type")
             for ev in p.evidence.get(claim, [])]

    def first(parts: Iterable[str], tokens: set[str] = frozenset()) -> list[Evidence]:  # type: ignore[assignment]
        return [ev for ev in named if has_part(str(ev.value), parts, tokens)][:2]

    def done(cls: str, evidence: list[Evidence], why: str) -> None:
        p.capability, p.capability_evidence, p.capability_why = cls, evidence, why

    ids = [ev for ev in named if str(ev.value).lower() in _AUDIO_QA_IDS] or first(_AUDIO_QA_PARTS)
    audio = p.evidence.get("audio_input", [])[:1]
    prompt = p.evidence.get("text_prompt", [])[:1]
    if ids:
        return done("audio-qa", ids + audio + prompt, "ordered audio and text question parts -> text")
    if ev := first(_DIALOGUE_PARTS):
        return done("spoken-dialogue", ev + audio,
                    "spoken dialogue: audio in, speech/text out; no text question (only a system prompt)")
    if ev := first(_TRANSCRIBE_PARTS, _TRANSCRIBE_TOKENS):
        return done("transcription-only", ev + audio, "transcription only: no question input")
    if ev := first(_SPEECH_OUT_PARTS, _SPEECH_OUT_TOKENS):
        if audio:
            return done("unknown", ev + audio, "speech output declared but the testcases also feed audio")
        return done("speech-output-only", ev, "speech output only: text in, audio out; no audio input")
    if audio and prompt:
        text_contracts = [ev for ev in p.evidence.get("user_contract", [])]
        if text_contracts:
            return done("audio-qa", audio + prompt + text_contracts[:1],
                        "audio input and a text question with a text answer contract")
        return done("unknown", audio + prompt, "audio and a text prompt, but no contract says what comes out")
    if audio:
        return done("unknown", audio, "audio input, but no task or contract this audit recognises")
    vision = first(_VISION_PARTS, _VISION_TOKENS) + p.evidence.get("image_input", [])[:1]
    if vision:
        return done("vision-language", vision, "audio not exposed by this TRTMC family: image and text only")
    text = [ev for ev in named if ev.claim in ("task_strategy", "runtime_strategy")][:2]
    if prompt or text:
        return done("text-only", text + prompt, "text only: no audio input exposed by this TRTMC family")
    return done("unknown", named[:2], "no task, contract or input this audit recognises")
