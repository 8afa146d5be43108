"""Parse one manifest document into a Profile: identity, task, runtime, precision, parallelism, inputs,
controls and skips, each with the JSON field it came from. Raises ManifestError naming a bad field.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from orchestrator.inventory.classify import classify_profile, select_group, words
from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import Control, Evidence, ManifestDocument

__all__ = ["ManifestError", "parse_manifest"]

_AUDIO_INPUT_KEYS = {"test_input_audio", "input_audio", "audio_input", "test_audio", "input_audios",
                     "test_input_audios"}
_IMAGE_INPUT_KEYS = {"test_image", "test_input_image", "input_image", "test_images", "input_images",
                     "test_video", "input_video"}
# Media under `inputs` that is what the answer is compared with, not what the model is fed.
_OUTPUT_MEDIA_PARTS = ("reference", "expected", "golden", "gold", "target", "output")
_AUDIO_EXTENSIONS = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a")
_PROMPT_KEYS = ("prompt", "question", "user_prompt", "text", "prompts", "questions")
# Text that steers a spoken dialogue without asking it anything.
_SYSTEM_PROMPT_KEYS = ("system_prompt", "system", "persona_prompt")
_SAMPLING_KEYS = ("temperature", "top_k", "top_p", "seed", "do_sample", "sampling", "num_beams",
                  "repetition_penalty")
_LANGUAGE_KEYS = ("language", "lang", "source_lang", "target_lang", "source_language", "target_language",
                  "task_language")
_TASK_FIELDS = ("task_strategy", "task")
_CACHE_FIELDS = ("max_cache_length", "max_sequence_length", "max_seq_len")
_TP_FIELDS = ("tensor_parallel_size", "tp_size")
_CP_FIELDS = ("context_parallel_size", "cp_size")
_CP_TOKEN = re.compile(r"^cp(\d+)$")
_LENGTH_KEYS = ("max_new_tokens", "max_tokens", "max_output_tokens")
_NESTED_DEPTH = 3  # runtime_config.audio_magpie.temperature, build_args.parallel.tp_size
_PARTIAL_TOKENS = {"partial", "random", "regression", "smoke", "dummy"}
_TP_TOKEN = re.compile(r"^tp(\d+)$")
_PROBE_TOKEN = re.compile(r"^probe\d*$")


# A manifest is foreign JSON whose layout varies by family and age: every key may be probed, so an object is a
# dict of values of unknown type, and each read checks the type it needs (a bad one is a ManifestError).
_Object = dict[str, object]


class ManifestError(Exception):
    pass


def _str_field(data: _Object, key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ManifestError(f"field {where}{key} is {type(value).__name__}, expected a string")
    return value


def _cases(data: _Object) -> list[tuple[str, _Object]]:
    """The top level (older layouts put one testcase's fields there) and each `testcases[i]`."""
    cases: list[tuple[str, _Object]] = [("", data)]
    raw = data.get("testcases")
    if raw is None:
        return cases
    if not isinstance(raw, list):
        raise ManifestError(f"field testcases is {type(raw).__name__}, expected a list")
    for i, case in enumerate(raw):
        if not isinstance(case, dict):
            raise ManifestError(f"field testcases[{i}] is {type(case).__name__}, expected an object")
        cases.append((f"testcases[{i}].", case))
    return cases


def _media(value: object) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str) and v]
    return []


def _is_audio_input(key: str, value: object, nested: bool) -> bool:
    """An audio file the model is fed: a known input key, or under `inputs` a key naming audio (or
    speech, when its value is an audio file), but never the reference output it is compared with."""
    if key in _AUDIO_INPUT_KEYS:
        return True
    if not nested or any(part in key for part in _OUTPUT_MEDIA_PARTS):
        return False
    if "audio" in key:
        return True
    return "speech" in key and any(v.lower().endswith(_AUDIO_EXTENSIONS) for v in _media(value))


def _nested(value: object, field: str, depth: int) -> Iterator[tuple[str, str, object]]:
    """(field path, key, value) of every key inside nested objects, `depth` levels down at most."""
    if depth <= 0 or not isinstance(value, dict):
        return
    for key, inner in value.items():
        path = f"{field}.{key}"
        yield path, key, inner
        yield from _nested(inner, path, depth - 1)


def _collect_case(p: Profile, prefix: str, case: _Object) -> None:
    _case_labels(p, prefix, case)
    _case_media(p, prefix, case)
    _case_controls(p, prefix, case)


def _case_labels(p: Profile, prefix: str, case: _Object) -> None:
    """The testcase's contract, test type, CI tier and skip."""
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
    tier = case.get("ci_tier")
    if isinstance(tier, str) and tier:
        p.note("ci_tier", prefix + "ci_tier", tier)
    skip = case.get("skip")
    if skip:
        p.note("skip", prefix + "skip", skip)
        p.skips.append(str(skip) if isinstance(skip, str) else f"{prefix}skip={skip!r}")


def _case_media(p: Profile, prefix: str, case: _Object) -> None:
    """The testcase's audio and image inputs, reference audio and prompts, at its top level and under `inputs`."""
    media: list[tuple[str, object]] = [(prefix + k, v) for k, v in case.items()]
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
        elif key in _SYSTEM_PROMPT_KEYS and _media(value):
            p.note("system_prompt", field, value)


def _case_controls(p: Profile, prefix: str, case: _Object) -> None:
    """Output length, sampling and language controls."""
    # Controls at the testcase's top level and inside its nested settings (runtime_config.<engine>.seed).
    settings: list[tuple[str, str, object]] = [(prefix + k, k, v) for k, v in case.items()]
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


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()


def _same_clip(p: Profile) -> None:
    """Count one clip once: a `*source*` path (where a packaged clip came from, e.g. an external checkout's
    `speech_source_relative_path`) is provenance, not a second input, when another audio input's file
    name starts with its name (`sample_general.wav` -> `assets/sample_general_input.flac`)."""
    inputs = p.evidence.get("audio_input", [])
    kept: list[Evidence] = []
    for ev in inputs:
        key = ev.field.rsplit(".", 1)[-1].lower()
        stem = _stem(str(ev.value))
        twin = next((o for o in inputs if o is not ev and "source" not in o.field.rsplit(".", 1)[-1].lower()
                     and _stem(str(o.value)).startswith(stem)), None) if "source" in key and stem else None
        if twin is None:
            kept.append(ev)
            continue
        p.same_clip.append(Evidence(claim="same_clip", file=ev.file, field=ev.field,
                                    value=f"{ev.value} is the source of {twin.value} ({twin.field})"))
    p.evidence["audio_input"] = kept
    p.audio_inputs = [str(ev.value) for ev in kept]


def _control(p: Profile, kind: str, field: str, value: object) -> None:
    key = field.rsplit(".", 1)[-1]
    ev = Evidence(claim=f"control:{kind}", file=p.doc.path, field=field, value=value)
    for i, c in enumerate(p.controls):
        if c.field == key:
            values = c.values if value in c.values else [*c.values, value]
            p.controls[i] = Control(kind=c.kind, field=key, values=values, evidence=[*c.evidence, ev])
            return
    p.controls.append(Control(kind=kind, field=key, values=[value], evidence=[ev]))  # type: ignore[arg-type]


def parse_manifest(doc: ManifestDocument) -> Profile:
    """Decode one manifest; raise ManifestError naming the field when it cannot be audited."""
    try:
        data = msgspec.json.decode(doc.data)
    except msgspec.DecodeError as exc:
        raise ManifestError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"top level is {type(data).__name__}, expected an object")
    stem = doc.path.rsplit("/", 1)[-1].removesuffix(".json")
    name = _str_field(data, "name", "") or stem
    p = Profile(doc=doc, name=name, hf_id=_str_field(data, "hf_id", ""),
                 revision=_str_field(data, "hf_revision", ""),
                 family=_str_field(data, "family", "") or doc.family_dir)
    p.note("profile", "name" if "name" in data else "(file name)", name)
    if p.hf_id:
        p.note("checkpoint", "hf_id", p.hf_id)
    if p.revision:
        p.note("revision", "hf_revision", p.revision)
    p.note("family", "family" if "family" in data else "(folder)", p.family)
    _identity(p, data)
    _parallelism(p, data)
    _name_marks(p, name)
    _partial_marks(p, data)
    for prefix, case in _cases(data):
        _collect_case(p, prefix, case)
    tiers = p.evidence.get("ci_tier", [])
    if tiers and all("l0" in words(str(ev.value)) for ev in tiers):
        p.l0_tier = f"ci_tier {tiers[0].value}"
    _same_clip(p)
    select_group(p)
    classify_profile(p)
    return p


def _identity(p: Profile, data: _Object) -> None:
    """Task, runtime, precision and cache length, each from the first field that gives it."""
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
        cache = data.get(key)
        if isinstance(cache, int) and not isinstance(cache, bool):
            p.cache_length = cache
            p.note("cache_length", key, cache)
            break


def _parallelism(p: Profile, data: _Object) -> None:
    """Tensor and context parallelism above 1, at the top level or in build_args."""
    parallel = [(k, k, v) for k, v in data.items()] + list(_nested(data.get("build_args"), "build_args",
                                                                     _NESTED_DEPTH))
    for field, key, value in parallel:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
            continue
        if key in _TP_FIELDS and p.tensor_parallel == 1:
            p.tensor_parallel = value
            p.note("tensor_parallel", field, value)
        elif key in _CP_FIELDS and p.context_parallel == 1:
            p.context_parallel = value
            p.note("context_parallel", field, value)


def _name_marks(p: Profile, name: str) -> None:
    """What the profile's name parts say: parallelism, the PR-CI tier, a partial model."""
    for token in words(name):
        if (m := _TP_TOKEN.match(token)) and p.tensor_parallel == 1 and int(m.group(1)) > 1:
            p.tensor_parallel = int(m.group(1))
            p.note("tensor_parallel", "name", name)
        if (m := _CP_TOKEN.match(token)) and p.context_parallel == 1 and int(m.group(1)) > 1:
            p.context_parallel = int(m.group(1))
            p.note("context_parallel", "name", name)
        if token == "l0":
            # TRTMC's PR-CI tier: same checkpoint and runtime with a shorter budget, not a reduced model.
            p.l0_tier = "name part 'l0'"
            p.note("l0_tier", "name", name)
        if token in _PARTIAL_TOKENS or _PROBE_TOKEN.match(token):
            p.partial_reasons.append(f"name part {token!r}")
            p.note("partial", "name", name)


def _partial_marks(p: Profile, data: _Object) -> None:
    """Partial-model fields, and the PR-CI stand-in this profile names."""
    for key in ("partial", "random_weights"):
        if data.get(key):
            p.partial_reasons.append(f"{key}={data[key]!r}")
            p.note("partial", key, data[key])
    if data.get("l0_replacement"):
        # Names the small stand-in that runs in PR CI instead of this (full) profile: not a partial mark.
        p.note("l0_stand_in", "l0_replacement", data["l0_replacement"])
