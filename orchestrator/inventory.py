"""The audio-QA inventory of a TRTMC checkout: a pure function from manifest documents to rows.

Reads nothing from disk or git (that is `trtmc_tree`) and renders nothing (that is `inventory_render`).

Normal-profile rule (one row per checkpoint = `hf_id` + `hf_revision`; every other profile is a variant):
1. A profile is *tensor-parallel* when `tensor_parallel_size` (or `tp_size`) > 1 or its name has a
   `-tpN` part; it is *partial* when its name has an `l0`, `partial`, `random`, `regression`, `smoke`,
   `dummy` or `probeNN` part, or the manifest carries `partial: true` or `random_weights: true`.
   Neither kind ever counts as full-model coverage. (`l0_replacement` names the L0 stand-in that PR CI
   runs instead of the profile carrying it, so it marks that profile as full, not partial.)
2. The family's default precision is the most frequent precision among the family's full-model profiles
   (neither tensor-parallel nor partial) across the whole checkout; ties go to bf16, fp16, fp32, fp8,
   nvfp4, int8, int4, then alphabetical order.
3. The normal profile is the full-model profile of the checkpoint at the family's default precision;
   failing that, at the best-ranked precision; ties go to the shorter, then alphabetically first name.
   A checkpoint with no full-model profile keeps its best partial/TP profile as representative and is
   marked `full_model_coverage = false`.
4. Every other profile of the checkpoint is a variant with its kinds: `tensor-parallel`, `partial`,
   `precision` (another precision than the normal profile) or `alternate` (another full profile).
A profile whose `hf_revision` is missing joins the checkpoint's single pinned revision when there is one.

Status precedence for a row: `--probe` evidence (newest run first) > manifest class other than audio-qa
(`unsupported`, with the gap) > configured in bench.toml and not yet run (`planned`) > audio-qa declared
with no served route (`blocked`) > a candidate absent from the checkout (`unsupported`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import msgspec

__all__ = [
    "INVENTORY_SCHEMA_VERSION",
    "CAPABILITY_CLASSES",
    "STATUSES",
    "LAYOUTS",
    "ManifestDocument",
    "SourceDocument",
    "TreeSource",
    "Evidence",
    "Control",
    "ConfiguredModel",
    "ProbeOutcome",
    "CheckpointRow",
    "VariantRow",
    "ErrorRow",
    "Reconciliation",
    "Inventory",
    "audit",
]

INVENTORY_SCHEMA_VERSION = 1

CapabilityClass = Literal[
    "audio-qa", "spoken-dialogue", "transcription-only", "speech-output-only", "vision-language",
    "text-only", "unknown",
]
# Order = strength for this workload: a checkpoint's class is the strongest over its profiles.
CAPABILITY_CLASSES: tuple[str, ...] = (
    "audio-qa", "spoken-dialogue", "transcription-only", "speech-output-only", "vision-language",
    "text-only", "unknown",
)
Status = Literal["unsupported", "blocked", "planned", "implemented", "family-validated", "aiperf-qualified"]
STATUSES: tuple[str, ...] = (
    "unsupported", "blocked", "planned", "implemented", "family-validated", "aiperf-qualified",
)
Layout = Literal["tests/e2e/models", "families"]
LAYOUTS: tuple[str, ...] = ("tests/e2e/models", "families")

# Why trtmc-server cannot reach an audio-QA Task today (shared/docs/trtmc.md section 1).
_NO_ROUTE = ("no served route reaches it: trtmc-server dispatches text Tasks only and answers every "
             "input_audio content part with 400; trtmc-perf-serve has no chat route for audio questions")


# ------------------------------------------------------------------------------------------ inputs


class ManifestDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One manifest file as read from the tree: repository-relative `path`, its `layout`, raw bytes."""

    path: str
    layout: Layout
    family_dir: str
    data: bytes


class SourceDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A family's Task-declaration source (support.py, runtime C++, README) as read from the tree."""

    path: str
    family_dir: str
    data: bytes


class TreeSource(msgspec.Struct, frozen=True, kw_only=True):
    """What was audited: the checkout, the revision asked for and the commit it resolved to."""

    root: str
    rev: str = ""
    commit: str = ""
    # True/False for a working folder inside git (uncommitted manifest changes); None when unknown.
    dirty: bool | None = None
    read_via: Literal["folder", "git"] = "folder"


class ConfiguredModel(msgspec.Struct, frozen=True, kw_only=True):
    """One bench.toml [[models]] entry as the audit needs it; `index` locates it in the file."""

    name: str
    checkpoint: str
    profile: str = ""
    revision: str = ""
    index: int = 0
    config_path: str = ""


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """One claim and where it was read: `file` plus `field` (a JSON key path, or a journal line)."""

    claim: str
    file: str
    field: str
    value: Any = None


class ProbeOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one `qualify` run established about one checkpoint (see inventory_probes)."""

    run_dir: str
    run_id: str
    started_ns: int
    model: str
    checkpoint: str
    profile: str = ""
    revision: str = ""
    # A status word from STATUSES, or "failed" (then `failed_stage` names the stage).
    status: str
    failed_stage: str = ""
    reason: str = ""
    evidence: list[Evidence] = []


# ----------------------------------------------------------------------------------------- outputs


class Control(msgspec.Struct, frozen=True, kw_only=True):
    """A request control the manifests exercise (max new tokens, sampling, language) with values seen."""

    kind: Literal["max_new_tokens", "sampling", "language"]
    field: str
    values: list[Any]
    evidence: list[Evidence]


class VariantRow(msgspec.Struct, frozen=True, kw_only=True):
    """A profile that is not its checkpoint's normal profile; never counted as another model."""

    checkpoint: str
    revision: str
    profile: str
    file: str
    kinds: list[str]
    precision: str = ""
    tensor_parallel: int = 1
    capability_class: str = "unknown"
    normal_profile: str = ""


class CheckpointRow(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint of the audio-conditioned group (or a bench.toml candidate), with its evidence."""

    checkpoint: str
    revision: str
    family: str
    profile: str
    file: str
    full_model_coverage: bool
    task_strategy: str
    runtime_strategy: str
    user_contracts: list[str]
    precision: str
    cache_length: int | None
    audio_inputs: list[str]
    capability_class: str
    classes_seen: dict[str, str]
    status: str
    gap: str
    controls: list[Control]
    evidence: list[Evidence]
    variants: list[str]
    candidate: str = ""
    in_audio_group: bool = True
    configured_as: list[str] = []
    probes: list[ProbeOutcome] = []
    accounted: bool = True
    notes: list[str] = []


class ErrorRow(msgspec.Struct, frozen=True, kw_only=True):
    """A manifest that could not be audited: the file and what is wrong with it."""

    file: str
    layout: str
    error: str


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    """The inventory against bench.toml: what is missing on either side, and unmatched probe results."""

    config_path: str = ""
    group_missing_from_config: list[str] = []
    configured_absent_from_checkout: list[str] = []
    configured_outside_group: list[str] = []
    probes_unmatched: list[str] = []


class Inventory(msgspec.Struct, frozen=True, kw_only=True):
    """The whole audit; `accounted` is true when every checkpoint has a status and, if needed, a gap."""

    schema_version: int = INVENTORY_SCHEMA_VERSION
    source: TreeSource
    layouts_found: list[str]
    manifests_scanned: int
    manifests_in_group: int
    rows: list[CheckpointRow]
    variants: list[VariantRow]
    errors: list[ErrorRow]
    reconciliation: Reconciliation
    accounted: bool
    unaccounted: list[str]


# --------------------------------------------------------------------------- manifest vocabulary

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

_AUDIO_INPUT_KEYS = {"test_input_audio", "input_audio", "audio_input", "test_audio", "input_audios",
                     "test_input_audios"}
_IMAGE_INPUT_KEYS = {"test_image", "test_input_image", "input_image", "test_images", "input_images",
                     "test_video", "input_video"}
# Media under `inputs` that is what the answer is compared with, not what the model is fed.
_OUTPUT_MEDIA_PARTS = ("reference", "expected", "golden", "gold", "target", "output")
_AUDIO_EXTENSIONS = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a")
_PROMPT_KEYS = ("prompt", "question", "user_prompt", "text", "prompts", "questions")
_SAMPLING_KEYS = ("temperature", "top_k", "top_p", "seed", "do_sample", "sampling", "num_beams",
                  "repetition_penalty")
_LANGUAGE_KEYS = ("language", "lang", "source_lang", "target_lang", "source_language", "target_language",
                  "task_language")
_TASK_FIELDS = ("task_strategy", "task")
_CACHE_FIELDS = ("max_cache_length", "max_sequence_length", "max_seq_len")
_TP_FIELDS = ("tensor_parallel_size", "tp_size")
_LENGTH_KEYS = ("max_new_tokens", "max_tokens", "max_output_tokens")
_NESTED_DEPTH = 3  # runtime_config.audio_magpie.temperature, build_args.parallel.tp_size
_PRECISION_RANK = ("bf16", "fp16", "fp32", "fp8", "nvfp4", "int8", "int4")
_PARTIAL_TOKENS = {"l0", "partial", "random", "regression", "smoke", "dummy"}
_TP_TOKEN = re.compile(r"^tp(\d+)$")
_PROBE_TOKEN = re.compile(r"^probe\d*$")
_SPLIT = re.compile(r"[-_.\s/]+")


def _tokens(text: str) -> set[str]:
    return {t for t in _SPLIT.split(text.lower()) if t}


def _has(text: str, parts: Iterable[str], tokens: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
    low = text.lower()
    return any(p in low for p in parts) or bool(_tokens(low) & tokens)


# ------------------------------------------------------------------------------ one manifest view


class _Profile(msgspec.Struct, kw_only=True):
    """The fields of one parsed manifest the audit needs, each with its evidence."""

    doc: ManifestDocument
    name: str
    hf_id: str
    revision: str
    family: str
    task: str = ""
    runtime: str = ""
    precision: str = ""
    cache_length: int | None = None
    tensor_parallel: int = 1
    partial_reasons: list[str] = []
    skips: list[str] = []
    contracts: list[str] = []
    test_types: list[str] = []
    audio_inputs: list[str] = []
    image_inputs: list[str] = []
    has_prompt: bool = False
    controls: list[Control] = []
    evidence: dict[str, list[Evidence]] = {}
    in_group: bool = False
    group_reason: Evidence | None = None
    capability: str = "unknown"
    capability_evidence: list[Evidence] = []
    capability_why: str = ""

    def note(self, claim: str, field: str, value: Any) -> Evidence:
        ev = Evidence(claim=claim, file=self.doc.path, field=field, value=value)
        self.evidence.setdefault(claim, []).append(ev)
        return ev


class _ManifestError(Exception):
    pass


def _str_field(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _ManifestError(f"field {where}{key} is {type(value).__name__}, expected a string")
    return value


def _cases(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The top level (older layouts put one testcase's fields there) and each `testcases[i]`."""
    cases: list[tuple[str, dict[str, Any]]] = [("", data)]
    raw = data.get("testcases")
    if raw is None:
        return cases
    if not isinstance(raw, list):
        raise _ManifestError(f"field testcases is {type(raw).__name__}, expected a list")
    for i, case in enumerate(raw):
        if not isinstance(case, dict):
            raise _ManifestError(f"field testcases[{i}] is {type(case).__name__}, expected an object")
        cases.append((f"testcases[{i}].", case))
    return cases


def _media(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str) and v]
    return []


def _is_audio_input(key: str, value: Any, nested: bool) -> bool:
    """An audio file the model is fed: a known input key, or under `inputs` a key naming audio (or
    speech, when its value is an audio file), but never the reference output it is compared with."""
    if key in _AUDIO_INPUT_KEYS:
        return True
    if not nested or any(part in key for part in _OUTPUT_MEDIA_PARTS):
        return False
    if "audio" in key:
        return True
    return "speech" in key and any(v.lower().endswith(_AUDIO_EXTENSIONS) for v in _media(value))


def _nested(value: Any, field: str, depth: int) -> Iterator[tuple[str, str, Any]]:
    """(field path, key, value) of every key inside nested objects, `depth` levels down at most."""
    if depth <= 0 or not isinstance(value, dict):
        return
    for key, inner in value.items():
        path = f"{field}.{key}"
        yield path, key, inner
        yield from _nested(inner, path, depth - 1)


def _collect_case(p: _Profile, prefix: str, case: dict[str, Any]) -> None:
    for key in ("user_contract", "contract"):
        value = case.get(key)
        if isinstance(value, str) and value:
            p.note("user_contract", prefix + key, value)
            if value not in p.contracts:
                p.contracts.append(value)
    value = case.get("test_type")
    if isinstance(value, str) and value:
        p.note("test_type", prefix + "test_type", value)
        if value not in p.test_types:
            p.test_types.append(value)
    skip = case.get("skip")
    if skip:
        p.note("skip", prefix + "skip", skip)
        p.skips.append(str(skip) if isinstance(skip, str) else f"{prefix}skip={skip!r}")
    media: list[tuple[str, Any]] = [(prefix + k, v) for k, v in case.items()]
    inputs = case.get("inputs")
    if isinstance(inputs, dict):
        media += [(f"{prefix}inputs.{k}", v) for k, v in inputs.items()]
    for field, value in media:
        key = field.rsplit(".", 1)[-1].lower()
        nested = ".inputs." in f".{field}"
        if _is_audio_input(key, value, nested):
            for item in _media(value):
                p.note("audio_input", field, item)
                p.audio_inputs.append(item)
        elif nested and "audio" in key:  # a reference output: evidence, not an input
            for item in _media(value):
                p.note("reference_audio", field, item)
        elif key in _IMAGE_INPUT_KEYS or (nested and ("image" in key or "video" in key)):
            for item in _media(value):
                p.note("image_input", field, item)
                p.image_inputs.append(item)
        elif key in _PROMPT_KEYS and _media(value):
            p.note("text_prompt", field, value)
            p.has_prompt = True
    # Controls at the testcase's top level and inside its nested settings (runtime_config.<engine>.seed).
    settings: list[tuple[str, str, Any]] = [(prefix + k, k, v) for k, v in case.items()]
    for k, v in case.items():
        if k != "inputs":
            settings += list(_nested(v, prefix + k, _NESTED_DEPTH))
    for field, key, value in settings:
        if isinstance(value, (dict, list)):
            continue
        if key in _LENGTH_KEYS or key.endswith("max_frames"):
            _control(p, "max_new_tokens", field, value)
        elif key in _SAMPLING_KEYS:
            _control(p, "sampling", field, value)
        elif key in _LANGUAGE_KEYS:
            _control(p, "language", field, value)


def _control(p: _Profile, kind: str, field: str, value: Any) -> None:
    key = field.rsplit(".", 1)[-1]
    ev = Evidence(claim=f"control:{kind}", file=p.doc.path, field=field, value=value)
    for i, c in enumerate(p.controls):
        if c.field == key:
            values = c.values if value in c.values else [*c.values, value]
            p.controls[i] = Control(kind=c.kind, field=key, values=values, evidence=[*c.evidence, ev])
            return
    p.controls.append(Control(kind=kind, field=key, values=[value], evidence=[ev]))  # type: ignore[arg-type]


def _parse(doc: ManifestDocument) -> _Profile:
    """Decode one manifest; raise _ManifestError naming the field when it cannot be audited."""
    try:
        data = msgspec.json.decode(doc.data)
    except msgspec.DecodeError as exc:
        raise _ManifestError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _ManifestError(f"top level is {type(data).__name__}, expected an object")
    stem = doc.path.rsplit("/", 1)[-1].removesuffix(".json")
    name = _str_field(data, "name", "") or stem
    p = _Profile(doc=doc, name=name, hf_id=_str_field(data, "hf_id", ""),
                 revision=_str_field(data, "hf_revision", ""),
                 family=_str_field(data, "family", "") or doc.family_dir)
    p.note("profile", "name" if "name" in data else "(file name)", name)
    if p.hf_id:
        p.note("checkpoint", "hf_id", p.hf_id)
    if p.revision:
        p.note("revision", "hf_revision", p.revision)
    p.note("family", "family" if "family" in data else "(folder)", p.family)
    for key in _TASK_FIELDS:
        if value := _str_field(data, key, ""):
            p.task = value
            p.note("task_strategy", key, value)
            break
    if value := _str_field(data, "runtime_strategy", ""):
        p.runtime = value
        p.note("runtime_strategy", "runtime_strategy", value)
    if value := _str_field(data, "precision", ""):
        p.precision = value.lower()
        p.note("precision", "precision", value)
    for key in _CACHE_FIELDS:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            p.cache_length = value
            p.note("cache_length", key, value)
            break
    for field, key, value in [(k, k, v) for k, v in data.items()] + list(_nested(data.get("build_args"),
                                                                               "build_args", _NESTED_DEPTH)):
        if key in _TP_FIELDS and isinstance(value, int) and not isinstance(value, bool) and value > 1:
            p.tensor_parallel = value
            p.note("tensor_parallel", field, value)
            break
    tokens = _tokens(name)
    for token in tokens:
        if (m := _TP_TOKEN.match(token)) and p.tensor_parallel == 1 and int(m.group(1)) > 1:
            p.tensor_parallel = int(m.group(1))
            p.note("tensor_parallel", "name", name)
        if token in _PARTIAL_TOKENS or _PROBE_TOKEN.match(token):
            p.partial_reasons.append(f"name part {token!r}")
            p.note("partial", "name", name)
    for key in ("partial", "random_weights"):
        if data.get(key):
            p.partial_reasons.append(f"{key}={data[key]!r}")
            p.note("partial", key, data[key])
    if data.get("l0_replacement"):
        # Names the small stand-in that runs in PR CI instead of this (full) profile: not a partial mark.
        p.note("l0_stand_in", "l0_replacement", data["l0_replacement"])
    for prefix, case in _cases(data):
        _collect_case(p, prefix, case)
    _select(p)
    _classify(p)
    return p


def _select(p: _Profile) -> None:
    """Audio-conditioned group: task, runtime, contracts or test types speak of audio, or audio inputs."""
    for claim, text in (("task_strategy", p.task), ("runtime_strategy", p.runtime)):
        if text and _has(text, _GROUP_PARTS, _GROUP_TOKENS):
            p.in_group, p.group_reason = True, p.evidence[claim][0]
            return
    for claim in ("user_contract", "test_type", "audio_input"):
        for ev in p.evidence.get(claim, []):
            if claim == "audio_input" or _has(str(ev.value), _GROUP_PARTS, _GROUP_TOKENS):
                p.in_group, p.group_reason = True, ev
                return


def _classify(p: _Profile) -> None:
    """Native capability class from the manifest's task, runtime, contracts and testcase inputs."""
    named = [ev for claim in ("task_strategy", "runtime_strategy", "user_contract", "test_type")
             for ev in p.evidence.get(claim, [])]

    def first(parts: Iterable[str], tokens: set[str] = frozenset()) -> list[Evidence]:  # type: ignore[assignment]
        return [ev for ev in named if _has(str(ev.value), parts, tokens)][:2]

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


# ------------------------------------------------------------- Task declarations in family sources

# A family declares an audio-QA Task in its support.py (`tasks.append("audio_text_to_text")`) and binds it
# in its runtime (`api::bind<api::IAudioTextToText>(...)`); both are needed, as test fixtures bind
# everything. Its README tables name the checkpoints (Gemma 4 through Edge-LLM has no manifest).
_DECLARED_TASK = re.compile(r"""["'](audio_text_to_text|image_audio_text_to_text|audio_video_text_to_text)["']""")
_BOUND_TASK = re.compile(r"\bbind<\s*(?:[\w:]+::)?I(AudioTextToText|ImageAudioTextToText|AudioVideoTextToText)\s*>")
_HF_ID = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w-]*/[A-Za-z0-9][\w.-]*[A-Za-z0-9])(?![\w/-])")


class _Declared(msgspec.Struct, kw_only=True):
    family: str
    declared: list[Evidence] = []
    bound: list[Evidence] = []
    named: dict[str, Evidence] = {}  # Hugging Face id (as written) -> the README line naming it


def _line_hits(doc: SourceDocument, pattern: re.Pattern[str], claim: str, *,
               where: Any = None) -> list[Evidence]:
    text = doc.data.decode("utf-8", "replace")
    return [Evidence(claim=claim, file=doc.path, field=f"line {n}", value=line.strip()[:200])
            for n, line in enumerate(text.splitlines(), 1)
            if (where is None or where(line)) and pattern.search(line)]


def _declarations(sources: Iterable[SourceDocument]) -> dict[str, _Declared]:
    """Families whose sources both declare and bind an audio-QA Task, with the checkpoints their
    READMEs name on table rows that speak of audio."""
    found: dict[str, _Declared] = {}
    for doc in sorted(sources, key=lambda d: d.path):
        fam = found.setdefault(doc.family_dir, _Declared(family=doc.family_dir))
        name = doc.path.rsplit("/", 1)[-1]
        if name == "support.py":
            fam.declared += _line_hits(doc, _DECLARED_TASK, "task_declared")
        elif name == "README.md":
            rows = _line_hits(doc, _HF_ID, "named_in_readme",
                              where=lambda ln: ln.lstrip().startswith("|") and "audio" in ln.lower())
            for ev in rows:
                # The checkpoint column is the first: "text/audio" in a later cell is not an id.
                first_cell = str(ev.value).strip().strip("|").split("|", 1)[0]
                for hf_id in _HF_ID.findall(first_cell):
                    fam.named.setdefault(hf_id, ev)
        else:
            fam.bound += _line_hits(doc, _BOUND_TASK, "task_bound")
    return {k: v for k, v in found.items() if v.declared and v.bound and v.named}


def _declared_row(hf_id: str, fam: _Declared, *, candidate: str, configured: list[ConfiguredModel],
                  probes: list[ProbeOutcome]) -> CheckpointRow:
    """A checkpoint known only from its family's sources: audio-QA declared, no manifest, no route."""
    task = _DECLARED_TASK.search(str(fam.declared[0].value))
    task_id = task.group(1) if task else "audio_text_to_text"
    decl, bind, named = fam.declared[0], fam.bound[0], fam.named[hf_id]
    evidence = [Evidence(claim="checkpoint", file=named.file, field=named.field, value=named.value),
                Evidence(claim="class:audio-qa", file=decl.file, field=decl.field, value=decl.value),
                Evidence(claim="class:audio-qa", file=bind.file, field=bind.field, value=bind.value)]
    if candidate:
        evidence.append(Evidence(claim="candidate", file="bench.toml", field="inventory.candidates", value=candidate))
    status, gap = "blocked", (f"{task_id} declared in {decl.file} ({decl.field}) and bound in {bind.file} "
                              f"({bind.field}), but no manifest builds or tests {hf_id}, and {_NO_ROUTE}")
    if configured:
        m = configured[0]
        status, gap = "planned", ""
        evidence.append(Evidence(claim="status:planned", file=m.config_path, field=f"models[{m.index}].checkpoint",
                                 value=m.checkpoint))
    else:
        evidence.append(Evidence(claim="status:blocked", file="shared/docs/trtmc.md",
                                 field="section 1 (Audio today)", value="input_audio -> 400"))
    status, gap, notes = _apply_probes(status, gap, (hf_id.lower(), ""), probes, evidence)
    notes.insert(0, "known from the family's sources only (no manifest): whether a build of this checkpoint "
                    "carries the Task depends on its own config, which only a build shows")
    return CheckpointRow(
        checkpoint=hf_id, revision="", family=fam.family, profile="", file=named.file, full_model_coverage=False,
        task_strategy=task_id, runtime_strategy="", user_contracts=[], precision="", cache_length=None,
        audio_inputs=[], capability_class="audio-qa", classes_seen={}, status=status, gap=gap, controls=[],
        evidence=evidence, variants=[], candidate=candidate, in_audio_group=True,
        configured_as=[m.name for m in configured], probes=probes, accounted=True, notes=notes,
    )


# ---------------------------------------------------------------------------- checkpoints and rows


def _precision_rank(precision: str) -> tuple[int, str]:
    rank = _PRECISION_RANK.index(precision) if precision in _PRECISION_RANK else len(_PRECISION_RANK)
    return rank, precision


def _family_defaults(profiles: Sequence[_Profile]) -> dict[str, str]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for p in profiles:
        if p.tensor_parallel == 1 and not p.partial_reasons:
            counts[p.family][p.precision] += 1
    return {
        fam: min(c, key=lambda prec: (-c[prec], *_precision_rank(prec))) for fam, c in counts.items()
    }


def _variant_kinds(p: _Profile, normal: _Profile) -> list[str]:
    kinds = []
    if p.tensor_parallel > 1:
        kinds.append("tensor-parallel")
    if p.partial_reasons:
        kinds.append("partial")
    if p.precision != normal.precision:
        kinds.append("precision")
    return kinds or ["alternate"]


def _checkpoints(profiles: Sequence[_Profile]) -> dict[tuple[str, str], list[_Profile]]:
    """Group by (hf_id, hf_revision); an unpinned profile joins the checkpoint's one pinned revision."""
    pinned: dict[str, set[str]] = defaultdict(set)
    for p in profiles:
        if p.revision:
            pinned[p.hf_id.lower()].add(p.revision)
    groups: dict[tuple[str, str], list[_Profile]] = defaultdict(list)
    for p in profiles:
        revision = p.revision
        revisions = pinned.get(p.hf_id.lower(), set())
        if not revision and len(revisions) == 1:
            revision = next(iter(revisions))
        groups[(p.hf_id.lower(), revision)].append(p)
    return groups


def _normal(members: list[_Profile], default_precision: str) -> tuple[_Profile, bool]:
    full = [p for p in members if p.tensor_parallel == 1 and not p.partial_reasons]
    pool = full or members

    def key(p: _Profile) -> tuple[Any, ...]:
        return (bool(p.partial_reasons), p.tensor_parallel, p.precision != default_precision,
                _precision_rank(p.precision), len(p.name), p.name)

    return min(pool, key=key), bool(full)


def _match(text: str, hf_id: str, names: Iterable[str]) -> bool:
    low = text.lower()
    return bool(low) and (low == hf_id.lower() or low in {n.lower() for n in names})


def _probe_status(probe: ProbeOutcome) -> str:
    """A probe's status word; a failure after the capability stage keeps what earlier stages proved."""
    if probe.status != "failed":
        return probe.status
    stage = probe.failed_stage.lower()
    if stage in ("correctness", "family_correctness"):
        return "implemented"
    if stage in ("identity", "aiperf", "load"):
        return "family-validated"
    return ""


def _row(
    key: tuple[str, str],
    members: list[_Profile],
    defaults: dict[str, str],
    *,
    candidate: str,
    configured: list[ConfiguredModel],
    probes: list[ProbeOutcome],
) -> tuple[CheckpointRow, list[VariantRow]]:
    family = members[0].family
    normal, full = _normal(members, defaults.get(family, ""))
    ordered = sorted(members, key=lambda p: (CAPABILITY_CLASSES.index(p.capability), p is not normal))
    strongest = ordered[0]
    cls = strongest.capability
    classes_seen = {p.name: p.capability for p in sorted(members, key=lambda p: p.name)}
    evidence: list[Evidence] = []
    for claim in ("checkpoint", "revision", "profile", "family", "task_strategy", "runtime_strategy",
                  "user_contract", "precision", "cache_length", "audio_input"):
        evidence += normal.evidence.get(claim, [])
    if normal.group_reason is not None:
        evidence.append(Evidence(claim="audio_group", file=normal.doc.path, field=normal.group_reason.field,
                                 value=normal.group_reason.value))
    evidence += [Evidence(claim=f"class:{cls}", file=ev.file, field=ev.field, value=ev.value)
                 for ev in strongest.capability_evidence]
    notes: list[str] = []
    if not full:
        notes.append("no full-model profile: only partial/L0 or tensor-parallel profiles; "
                     "this row does not count as full-model coverage")
    if strongest is not normal:
        notes.append(f"class {cls} comes from profile {strongest.name} ({strongest.doc.path}); "
                     f"the normal profile {normal.name} is {normal.capability}")
    others = {p.capability for p in members} - {cls}
    gap_classes = f" (other profiles: {', '.join(sorted(others))})" if others else ""
    status, gap = _manifest_status(cls, strongest, configured, evidence, gap_classes)
    if strongest.skips:
        reason = "; ".join(dict.fromkeys(strongest.skips))
        evidence += strongest.evidence.get("skip", [])
        notes.append(f"profile {strongest.name} is skipped by its own manifest: {reason}")
        if gap:
            gap = f"{gap}; and the manifest skips it: {reason}"
    status, gap, probe_notes = _apply_probes(status, gap, key, probes, evidence)
    notes += probe_notes
    row = CheckpointRow(
        checkpoint=normal.hf_id, revision=key[1], family=family, profile=normal.name, file=normal.doc.path,
        full_model_coverage=full, task_strategy=normal.task, runtime_strategy=normal.runtime,
        user_contracts=sorted({c for p in members for c in p.contracts}) if not normal.contracts
        else list(normal.contracts),
        precision=normal.precision, cache_length=normal.cache_length,
        audio_inputs=sorted(set(normal.audio_inputs)), capability_class=cls, classes_seen=classes_seen,
        status=status, gap=gap, controls=list(normal.controls), evidence=evidence,
        variants=sorted(p.name for p in members if p is not normal), candidate=candidate,
        in_audio_group=any(p.in_group for p in members), configured_as=[m.name for m in configured],
        probes=probes, accounted=cls != "unknown" or status != "unsupported", notes=notes,
    )
    variants = [
        VariantRow(checkpoint=normal.hf_id, revision=key[1], profile=p.name, file=p.doc.path,
                   kinds=_variant_kinds(p, normal), precision=p.precision, tensor_parallel=p.tensor_parallel,
                   capability_class=p.capability, normal_profile=normal.name)
        for p in sorted(members, key=lambda p: p.name) if p is not normal
    ]
    return row, variants


def _manifest_status(
    cls: str, strongest: _Profile, configured: list[ConfiguredModel], evidence: list[Evidence], extra: str
) -> tuple[str, str]:
    if cls != "audio-qa":
        gap = f"{strongest.capability_why}{extra}"
        if cls == "unknown":
            gap = f"capability unknown: {gap}; classify it by hand or add a rule"
        return "unsupported", gap
    if configured:
        m = configured[0]
        evidence.append(Evidence(claim="status:planned", file=m.config_path, field=f"models[{m.index}].checkpoint",
                                 value=m.checkpoint))
        return "planned", ""
    evidence.append(Evidence(claim="status:blocked", file="shared/docs/trtmc.md", field="section 1 (Audio today)",
                             value="input_audio -> 400"))
    declared = next((f"{ev.value} ({ev.field})" for ev in strongest.capability_evidence), "audio-QA")
    return "blocked", f"{declared} declared but {_NO_ROUTE}"


def _apply_probes(
    status: str, gap: str, key: tuple[str, str], probes: list[ProbeOutcome], evidence: list[Evidence]
) -> tuple[str, str, list[str]]:
    """Newest run first: live evidence outranks any manifest reading; a pinned-revision mismatch is ignored."""
    notes: list[str] = []
    for probe in sorted(probes, key=lambda pr: -pr.started_ns):
        if key[1] and probe.revision and probe.revision != key[1]:
            notes.append(f"probe run {probe.run_id} tested revision {probe.revision}, not {key[1]}: ignored")
            continue
        word = _probe_status(probe)
        if not word:
            notes.append(f"probe run {probe.run_id}: {probe.model} failed at stage {probe.failed_stage or '?'}"
                         f" ({probe.reason}); no capability established")
            continue
        evidence.extend(probe.evidence)
        if probe.status == "failed":
            notes.append(f"probe run {probe.run_id}: failed at stage {probe.failed_stage}; "
                         f"earlier stages establish {word}")
        if word in ("unsupported", "blocked"):
            return word, f"live probe ({probe.run_id}): {probe.reason or 'no audio route'}", notes
        return word, "", notes
    return status, gap, notes


_GENERIC_TOKENS = {"instruct", "thinking", "chat", "base", "model", "nvidia", "google", "openai"}


def _near(candidate: str, groups: dict[tuple[str, str], list[_Profile]], most: int = 3) -> list[str]:
    """Checkpoints whose id or profile names share the most distinctive name parts with an absent
    candidate (a likely misspelling in bench.toml), best first; none when nothing is shared."""
    wanted = {t for t in _tokens(candidate.rsplit("/", 1)[-1]) if len(t) >= 4 and t not in _GENERIC_TOKENS}
    scored = []
    for (hf_id, _rev), members in groups.items():
        text = " ".join([hf_id.rsplit("/", 1)[-1], *(p.name.lower() for p in members)])
        score = sum(1 for t in wanted if t in text)
        if score:
            scored.append((-score, members[0].hf_id))
    if not scored:
        return []
    best = min(scored)[0]
    return sorted({hf for score, hf in scored if score == best})[:most]


def _candidate_row(candidate: str, configured: list[ConfiguredModel], probes: list[ProbeOutcome],
                   source: TreeSource, near: Sequence[str] = ()) -> CheckpointRow:
    where = f"commit {source.commit[:12]}" if source.commit else source.root
    evidence = [Evidence(claim="candidate", file="bench.toml", field="inventory.candidates", value=candidate)]
    # "No manifest", not "not in the checkout": a README or the Task SDK may still mention it (Gemma 4),
    # but only a manifest, a runtime Task and a served route together establish a capability.
    gap = (f"no manifest in this TRTMC checkout ({where}) names {candidate} as hf_id or profile, so nothing "
           f"there establishes what TRTMC serves for it")
    if near:
        gap += (f"; nearest checkpoints here: {', '.join(near)} (another id is another checkpoint: "
                f"correct [inventory] candidates if one of them is meant)")
    status = "unsupported"
    if configured:
        m = configured[0]
        status, gap = "planned", ""
        evidence.append(Evidence(claim="status:planned", file=m.config_path,
                                 field=f"models[{m.index}].checkpoint", value=m.checkpoint))
    status, gap, notes = _apply_probes(status, gap, (candidate.lower(), ""), probes, evidence)
    return CheckpointRow(
        checkpoint=candidate, revision="", family="", profile="", file="", full_model_coverage=False,
        task_strategy="", runtime_strategy="", user_contracts=[], precision="", cache_length=None,
        audio_inputs=[], capability_class="unknown", classes_seen={}, status=status, gap=gap, controls=[],
        evidence=evidence, variants=[], candidate=candidate, in_audio_group=False,
        configured_as=[m.name for m in configured], probes=probes, accounted=True, notes=notes,
    )


def audit(
    documents: Iterable[ManifestDocument],
    *,
    source: TreeSource,
    candidates: Sequence[str] = (),
    models: Sequence[ConfiguredModel] = (),
    probes: Sequence[ProbeOutcome] = (),
    config_path: str = "",
    task_sources: Iterable[SourceDocument] = (),
) -> Inventory:
    """Audit manifest documents into one row per checkpoint of the audio group. Pure; never raises on data.

    Args:
        documents: every manifest found in the tree, in either layout.
        candidates: bench.toml `[inventory] candidates` (Hugging Face ids or profile names), always included.
        models: bench.toml `[[models]]`, for `planned` and the reconciliation.
        probes: outcomes of `qualify` runs (inventory_probes.read_probes).
        task_sources: the families' support.py, runtime and README files (trtmc_tree.read_task_sources):
            a checkpoint no manifest names but whose family declares and binds an audio-QA Task gets a row.
    """
    docs = sorted(documents, key=lambda d: d.path)
    errors: list[ErrorRow] = []
    profiles: list[_Profile] = []
    for doc in docs:
        try:
            p = _parse(doc)
        except _ManifestError as exc:
            errors.append(ErrorRow(file=doc.path, layout=doc.layout, error=str(exc)))
            continue
        if not p.hf_id:
            if p.in_group:
                errors.append(ErrorRow(file=doc.path, layout=doc.layout,
                                       error="audio-conditioned manifest without hf_id: cannot name its checkpoint"))
            continue
        profiles.append(p)
    defaults = _family_defaults(profiles)
    groups = _checkpoints(profiles)
    candidate_hits: dict[str, tuple[str, str]] = {}
    for cand in candidates:
        for key, members in groups.items():
            if _match(cand, key[0], (p.name for p in members)):
                candidate_hits.setdefault(cand, key)
    by_key_candidate = {key: cand for cand, key in candidate_hits.items()}

    def configured_for(hf_id: str, names: Iterable[str]) -> list[ConfiguredModel]:
        names = list(names)
        return [m for m in models if _match(m.checkpoint, hf_id, ()) or (m.profile and m.profile in names)]

    def probes_for(hf_id: str, names: Iterable[str]) -> list[ProbeOutcome]:
        names = list(names)
        return [pr for pr in probes if _match(pr.checkpoint, hf_id, ()) or (pr.profile and pr.profile in names)]

    rows: list[CheckpointRow] = []
    variants: list[VariantRow] = []
    used_models: set[str] = set()
    used_probes: set[int] = set()
    outside_configured: list[str] = []
    for key in sorted(groups):
        members = groups[key]
        names = [p.name for p in members]
        configured = configured_for(key[0], names)
        in_group = any(p.in_group for p in members)
        used_models.update(m.name for m in configured)
        if not in_group and key not in by_key_candidate:
            outside_configured += [f"{m.name} ({m.checkpoint})" for m in configured]
            continue
        matched = probes_for(key[0], names)
        used_probes.update(id(pr) for pr in matched)
        row, vrows = _row(key, members, defaults, candidate=by_key_candidate.get(key, ""),
                          configured=configured, probes=matched)
        rows.append(row)
        variants += vrows
    manifest_ids = {key[0] for key in groups}
    for fam in _declarations(task_sources).values():
        for hf_id in sorted(fam.named):
            if hf_id.lower() in manifest_ids:
                continue  # its manifests already make its row
            cand = next((c for c in candidates if c not in candidate_hits and _match(c, hf_id, ())), "")
            if cand:
                candidate_hits[cand] = (hf_id.lower(), "")
            configured = configured_for(hf_id, ())
            used_models.update(m.name for m in configured)
            matched = probes_for(hf_id, ())
            used_probes.update(id(pr) for pr in matched)
            rows.append(_declared_row(hf_id, fam, candidate=cand, configured=configured, probes=matched))
    for cand in candidates:
        if cand in candidate_hits:
            continue
        configured = [m for m in models if _match(m.checkpoint, cand, ()) or m.profile.lower() == cand.lower()]
        used_models.update(m.name for m in configured)
        matched = [pr for pr in probes if _match(pr.checkpoint, cand, ()) or pr.profile.lower() == cand.lower()]
        used_probes.update(id(pr) for pr in matched)
        rows.append(_candidate_row(cand, configured, matched, source, _near(cand, groups)))
    reconciliation = Reconciliation(
        config_path=config_path,
        group_missing_from_config=[f"{r.checkpoint}@{r.revision}" if r.revision else r.checkpoint
                                   for r in rows if r.file and not r.configured_as],
        configured_absent_from_checkout=[f"{m.name} ({m.checkpoint})" for m in models if m.name not in used_models],
        configured_outside_group=outside_configured,
        probes_unmatched=[f"{pr.model} ({pr.checkpoint}) in {pr.run_dir}" for pr in probes
                          if id(pr) not in used_probes],
    )
    unaccounted = [f"{e.file}: {e.error}" for e in errors]
    unaccounted += [f"{r.checkpoint}: {r.gap}" for r in rows if not r.accounted]
    return Inventory(
        source=source, layouts_found=sorted({d.layout for d in docs}), manifests_scanned=len(docs),
        manifests_in_group=sum(1 for p in profiles if p.in_group), rows=rows, variants=variants, errors=errors,
        reconciliation=reconciliation, accounted=not unaccounted, unaccounted=unaccounted,
    )
