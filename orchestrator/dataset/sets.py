"""Audio-QA datasets: the manifest Struct, the verifying loader, the arms and their AIPerf export. Blocks
(file reads, decoding, WAV writes): async callers use `anyio.to_thread.run_sync`. Never judges answers
(orchestrator.judge.scoring does; they are checked here in their normal form, answer_text.py)."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import numpy as np
import soundfile as sf
from msgspec import Meta

from orchestrator.base.errors import DatasetError
from orchestrator.config import ARMS, DatasetConfig
from orchestrator.dataset.answer_text import normalize
from orchestrator.dataset.clip_cache import ClipCache, ClipSent, append_manifest
from orchestrator.dataset.facts_cache import FactsCache, FileStamp, stamp_of

__all__ = [
    "Item",
    "Dataset",
    "AudioProps",
    "ConditioningPair",
    "ArmRequest",
    "KINDS",
    "CONTAINERS",
    "MANIFEST",
    "load_dataset",
    "resolve_dataset_path",
    "probe_audio",
    "session_key",
    "parse_session_key",
    "prepare_arms",
    "conditioning_subset",
    "interleave_kinds",
    "write_aiperf_input",
]

MANIFEST = "manifest.jsonl"
# The item kinds audioqa-v1 covers (its card lists them); a dataset may use others (they pass through
# to per-kind reports).
KINDS = (
    "content", "reasoning", "count", "pitch", "frequency", "duration", "direction", "loudness",
    "speech_presence", "silence", "channel", "timing", "order", "speaker_sex", "speaker_count",
    "speaking_rate", "language",
)
CONTAINERS = ("wav", "flac", "ogg", "mp3")
# AIPerf 0.13 sends only .wav and .mp3 (aiperf.dataset.utils.open_audio); others are decoded to WAV.
_WIRE_CONTAINERS = ("wav", "mp3")
_SF_FORMAT = {"WAV": "wav", "FLAC": "flac", "OGG": "ogg", "MP3": "mp3"}
_CODEC = {("wav", "PCM_16"): "pcm_s16le", ("flac", "PCM_16"): "flac_s16", ("ogg", "VORBIS"): "vorbis",
          ("ogg", "OPUS"): "opus", ("mp3", "MPEG_LAYER_III"): "mp3"}
_ID_RE = r"^[a-z0-9][a-z0-9-]*$"
_KEY_SEP = "."  # item ids never contain it, so the key splits unambiguously

ItemId = Annotated[str, Meta(pattern=_ID_RE, max_length=80)]
Kind = Annotated[str, Meta(pattern=r"^[a-z][a-z_]*$")]
Hex64 = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}$")]
NonEmpty = Annotated[str, Meta(min_length=1)]
PositiveInt = Annotated[int, Meta(ge=1)]


class Item(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One manifest line: a question about one clip, its gold answer and the clip's properties."""

    id: ItemId
    audio: NonEmpty  # relative to the dataset folder, '/'-separated, must stay inside it
    question: NonEmpty
    answer: NonEmpty
    variants: list[str] = []
    choices: list[str] = []
    # Extra accepted wordings per choice ("rising": ["rises", "goes up"]).
    choice_aliases: dict[str, list[str]] = {}
    scoring: Literal["exact", "choice", "numeric"]
    tolerance: Annotated[float, Meta(ge=0)] = 0.0
    kind: Kind
    transcript_answerable: bool
    transcript: str | None = None
    recipe: NonEmpty
    container: Literal["wav", "flac", "ogg", "mp3"]
    codec: NonEmpty
    sample_rate_hz: PositiveInt
    channels: PositiveInt
    frames: PositiveInt
    duration_s: Annotated[float, Meta(gt=0)]
    bytes: PositiveInt
    sha256: Hex64
    pcm_sha256: Hex64


class AudioProps(msgspec.Struct, frozen=True, kw_only=True):
    """What a clip file decodes to; `pcm_sha256` hashes interleaved little-endian int16 frames."""

    container: str
    codec: str
    sample_rate_hz: int
    channels: int
    frames: int
    duration_s: float
    bytes: int
    sha256: str
    pcm_sha256: str


class ConditioningPair(msgspec.Struct, frozen=True, kw_only=True):
    """Two items whose answers must differ: same clip asked differently, or same question on two clips."""

    relation: Literal["same_clip", "same_question"]
    first: str
    second: str


class ArmRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request to send: an item under one arm, with the audio file that goes on the wire."""

    key: str
    item_id: str
    arm: Literal["audio", "silence", "transcript"]
    text: str
    audio_path: str | None  # absolute path of the .wav/.mp3 sent; None for the transcript arm
    source_format: str  # the clip's container ("flac", ...)
    wire_format: str | None  # "wav" or "mp3"; None when no audio is sent
    audio_seconds: float
    audio_bytes: int


class Dataset(msgspec.Struct, frozen=True, kw_only=True):
    """A verified dataset folder: its items in manifest order and its identity hash."""

    root: Path
    name: str
    items: tuple[Item, ...]
    identity: str

    def item(self, item_id: str) -> Item:
        """The item with this id. Raises DatasetError naming the id when there is none."""
        for it in self.items:
            if it.id == item_id:
                return it
        raise DatasetError(f"{self.root}: no item {item_id!r} (the dataset has {len(self.items)} items)")

    def conditioning_pairs(self) -> list[ConditioningPair]:
        """Same clip with different questions, and same question on different clips, answers differing."""
        items = self.items
        # Normalised once per item, and pairs looked for only within a clip or within one question: the
        # pairs are quadratic in the items, normalisation is not cheap.
        answers = [normalize(it.answer) for it in items]
        questions = [normalize(it.question) for it in items]
        groups: dict[tuple[str, str], list[int]] = {}
        for i, it in enumerate(items):
            groups.setdefault(("clip", it.audio), []).append(i)
            groups.setdefault(("question", questions[i]), []).append(i)
        found: list[tuple[int, int, str]] = []
        for (what, _), members in groups.items():
            for x, i in enumerate(members):
                for j in members[x + 1:]:
                    if answers[i] == answers[j]:
                        continue
                    same_clip, same_question = items[i].audio == items[j].audio, questions[i] == questions[j]
                    if what == "clip" and not same_question:
                        found.append((i, j, "same_clip"))
                    elif what == "question" and not same_clip:
                        found.append((i, j, "same_question"))
        pairs = [ConditioningPair(relation=rel, first=items[i].id, second=items[j].id)  # type: ignore[arg-type]
                 for i, j, rel in sorted(found)]
        return pairs


class _ClipFacts(msgspec.Struct, frozen=True, kw_only=True):
    """A clip's decoded properties, as kept between runs: true of the file while its stamp is `stamp`."""

    stamp: FileStamp
    props: AudioProps


class _Made(msgspec.Struct, frozen=True, kw_only=True):
    """The clip-cache entry (a 16-bit WAV) made from a source: a clip's content, or a silence's shape."""

    sha256: str
    bytes: int


# What decoding gives depends on libsndfile (Vorbis and MP3 are decoded by it): facts from another version are
# found again.
_FACTS_VERSION = f"1; libsndfile {sf.__libsndfile_version__}"
_MADE_FACTS = "made-wav.json"
_decoder = msgspec.json.Decoder(Item)
_encoder = msgspec.json.Encoder()
_PATH_RE = re.compile(r"at `\$((?:\.[A-Za-z0-9_-]+|\[\d+\])*)`")


def probe_audio(path: Path) -> AudioProps:
    """Decode a clip and describe it. Blocks. Raises DatasetError when soundfile cannot read it."""
    try:
        data = path.read_bytes()
        info = sf.info(str(path))
        pcm, rate = sf.read(str(path), dtype="int16", always_2d=True)
    except (OSError, RuntimeError, sf.LibsndfileError) as exc:
        raise DatasetError(f"{path}: cannot decode audio: {exc}") from None
    container = _SF_FORMAT.get(info.format, info.format.lower())
    frames, channels = pcm.shape
    return AudioProps(
        container=container,
        codec=_CODEC.get((container, info.subtype), info.subtype.lower()),
        sample_rate_hz=int(rate),
        channels=int(channels),
        frames=int(frames),
        duration_s=round(frames / rate, 6),
        bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        pcm_sha256=hashlib.sha256(np.ascontiguousarray(pcm, dtype="<i2").tobytes()).hexdigest(),
    )


def _probe_known(path: Path, key: str, known: FactsCache[_ClipFacts] | None) -> AudioProps:
    """probe_audio's answer, taken from `known` while the file's stamp is the one it was probed at."""
    if known is None:
        return probe_audio(path)
    try:
        stamp = stamp_of(path)
    except OSError:
        return probe_audio(path)  # which names the problem
    kept = known.get(key)
    if kept is not None and kept.stamp == stamp:
        return kept.props
    props = probe_audio(path)
    if stamp_of(path) == stamp:  # a file that changed while it was read is not kept
        known.put(key, _ClipFacts(stamp=stamp, props=props))
    return props


def _facts_file(folder: Path, root: Path) -> Path:
    where = str(root.resolve())
    return folder / f"dataset-{root.resolve().name}-{hashlib.sha256(where.encode()).hexdigest()[:12]}.json"


def _field_error(exc: msgspec.ValidationError) -> tuple[str, str]:
    msg = str(exc)
    match = _PATH_RE.search(msg)
    if not match:
        named = re.match(r"Object (missing required|contains unknown) field `([^`]+)`", msg)
        if named:
            what = "missing (required)" if named.group(1).startswith("missing") else "unknown field (remove it)"
            return named.group(2), what
        return "(line)", msg
    return match.group(1).lstrip(".") or "(line)", msg[: match.start()].rstrip(" -").replace("`", "")


def _audio_path(root: Path, item: Item, where: str, real_root: Path) -> Path:
    """The item's clip under `root` (whose resolved path is `real_root`), checked to stay inside it."""
    rel = item.audio
    parts = rel.split("/")
    if "\\" in rel or rel.startswith("/") or re.match(r"^[A-Za-z]:", rel) or ".." in parts or "" in parts:
        raise DatasetError(f"{where}: field audio: {rel!r} must be a relative '/'-separated path inside "
                           f"the dataset folder, without '..' or empty parts")
    path = root / rel
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise DatasetError(f"{where}: field audio: file {rel!r} does not exist in {root}") from None
    if not resolved.is_relative_to(real_root):
        raise DatasetError(f"{where}: field audio: {rel!r} resolves to {resolved}, outside {root} "
                           f"(a symbolic link escapes the dataset folder)")
    if not resolved.is_file():
        raise DatasetError(f"{where}: field audio: {rel!r} is not a regular file")
    if path.suffix.lower().lstrip(".") != item.container:
        raise DatasetError(f"{where}: field audio: extension of {rel!r} does not match container "
                           f"{item.container!r}")
    return path


def _check_answer_rule(item: Item, where: str) -> None:
    def fail(field: str, what: str) -> None:
        raise DatasetError(f"{where}: field {field}: {what}")

    if not normalize(item.answer):
        fail("answer", f"{item.answer!r} is empty after normalisation")
    if item.scoring == "choice":
        norms = [normalize(c) for c in item.choices]
        if len(norms) < 2 or len(set(norms)) != len(norms) or not all(norms):
            fail("choices", f"choice scoring needs at least two distinct non-empty choices, got {item.choices}")
        if normalize(item.answer) not in norms:
            fail("answer", f"{item.answer!r} is not one of the choices {item.choices}")
        for key in item.choice_aliases:
            if key not in item.choices:
                fail("choice_aliases", f"key {key!r} is not one of the choices {item.choices}")
    elif item.choice_aliases:
        fail("choice_aliases", "only allowed with scoring 'choice'")
    if item.scoring == "numeric":
        try:
            float(item.answer)
        except ValueError:
            fail("answer", f"numeric scoring needs a plain number as the answer, got {item.answer!r}")
    elif item.tolerance:
        fail("tolerance", f"only allowed with scoring 'numeric' (got {item.tolerance})")
    if item.transcript is not None and not item.transcript.strip():
        fail("transcript", "empty; leave it out (null) for clips without speech")
    if item.transcript_answerable and item.transcript is None:
        fail("transcript_answerable", "true, but the item has no transcript")


def _check_props(item: Item, props: AudioProps, where: str) -> None:
    for field in ("container", "codec", "sample_rate_hz", "channels", "frames", "bytes", "sha256",
                  "pcm_sha256"):
        want, got = getattr(item, field), getattr(props, field)
        if want != got:
            raise DatasetError(f"{where}: field {field}: manifest says {want!r}, but {item.audio} has {got!r}"
                               f"{'; regenerate the manifest or restore the file' if 'sha' in field else ''}")
    if abs(item.duration_s - props.duration_s) > 1e-6:
        raise DatasetError(f"{where}: field duration_s: manifest says {item.duration_s}, but {item.audio} "
                           f"decodes to {props.duration_s} s ({props.frames} frames at {props.sample_rate_hz} Hz)")


def load_dataset(path: str | Path, *, facts: str | Path | None = None) -> Dataset:
    """Load and verify a dataset folder (manifest, every file, hashes, decoded properties). Blocks.

    With `facts` (a folder: the clip cache's `facts/`), each clip's decoded properties are kept there under its
    file's stamp (device, inode, size, modification and change times) and taken from there while the stamp
    matches, instead of decoding and hashing the clip again; a changed file is decoded again. Raises
    DatasetError naming the manifest line, the item and the field at the first problem.
    """
    root = Path(path)
    manifest = root / MANIFEST
    try:
        raw = manifest.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{root}: no {MANIFEST}; a dataset folder holds {MANIFEST} and its audio") from None
    except OSError as exc:
        raise DatasetError(f"{manifest}: cannot read: {exc.strerror}") from None
    known = FactsCache(_facts_file(Path(facts), root), _ClipFacts, _FACTS_VERSION) if facts is not None else None
    try:
        items = _verified_items(root, manifest, raw, known)
    finally:
        if known is not None:
            known.save()
    return Dataset(root=root.resolve(), name=root.resolve().name, items=tuple(items),
                   identity=_identity(raw, items))


def _verified_items(root: Path, manifest: Path, raw: bytes, known: FactsCache[_ClipFacts] | None) -> list[Item]:
    items: list[Item] = []
    seen: dict[str, int] = {}
    probes: dict[str, AudioProps] = {}
    real_root = root.resolve()  # once: resolving it for every item was half the per-clip path checks' cost
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{manifest}:{lineno}"
        try:
            item = _decoder.decode(line)
        except msgspec.ValidationError as exc:
            field, what = _field_error(exc)
            item_id = _peek_id(line)
            raise DatasetError(f"{where}: item {item_id}: field {field}: {what[:1].lower() + what[1:]}") from None
        except msgspec.DecodeError as exc:
            raise DatasetError(f"{where}: not a JSON object: {exc}") from None
        where = f"{where}: item {item.id!r}"
        if item.id in seen:
            raise DatasetError(f"{where}: field id: duplicate of line {seen[item.id]}")
        seen[item.id] = lineno
        _check_answer_rule(item, where)
        file = _audio_path(root, item, where, real_root)
        if item.audio not in probes:
            probes[item.audio] = _probe_known(file, item.audio, known)
        _check_props(item, probes[item.audio], where)
        items.append(item)
    if not items:
        raise DatasetError(f"{manifest}: no items")
    return items


def _peek_id(line: bytes) -> str:
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return "(unreadable)"
    item_id = value.get("id") if isinstance(value, dict) else None
    return repr(item_id) if isinstance(item_id, str) else "(no id)"


def _identity(manifest: bytes, items: Sequence[Item]) -> str:
    # The manifest already names every hash; hashing them again keeps the identity tied to the
    # verified files even if a future manifest format stops carrying them verbatim.
    h = hashlib.sha256(b"aqbench-dataset\n")
    h.update(manifest)
    for it in items:
        h.update(f"{it.audio}\0{it.sha256}\0{it.pcm_sha256}\n".encode())
    return h.hexdigest()


def resolve_dataset_path(cfg: DatasetConfig) -> Path:
    """cfg.path if set, else the shipped dataset cfg.name (installed package data, then the repo folder)."""
    if cfg.path:
        return Path(cfg.path)
    candidates: list[Path] = []
    try:
        import aqbench_datasets  # a namespace package: the wheel's folder, or the checkout's via the editable finder
    except ModuleNotFoundError:
        pass  # not installed as a package: a plain checkout
    else:
        # Not importlib.resources.files(): setuptools' editable finder puts a non-directory path hook
        # entry into __path__, which files() rejects (NotADirectoryError). Real folders only.
        for entry in getattr(aqbench_datasets, "__path__", []):
            if Path(entry).is_dir():
                candidates.append(Path(entry) / cfg.name)
    candidates.append(Path(__file__).resolve().parents[2] / "datasets" / cfg.name)
    for candidate in candidates:
        if (candidate / MANIFEST).is_file():
            return candidate
    raise DatasetError(f"dataset {cfg.name!r}: not shipped with this install (looked in "
                       + ", ".join(str(c) for c in candidates) + "); set [dataset] path to a dataset folder")


def session_key(item_id: str, arm: str) -> str:
    """The AIPerf session_id for an item under an arm ('count-beeps-5.silence')."""
    if not re.match(_ID_RE, item_id):
        raise DatasetError(f"item id {item_id!r} does not match {_ID_RE}")
    if arm not in ARMS:
        raise DatasetError(f"arm {arm!r} is not one of {', '.join(ARMS)}")
    return f"{item_id}{_KEY_SEP}{arm}"


def parse_session_key(key: str) -> tuple[str, str]:
    """Split a session key back into (item_id, arm). Raises DatasetError for a foreign key."""
    item_id, sep, arm = key.rpartition(_KEY_SEP)
    if not sep or arm not in ARMS or not re.match(_ID_RE, item_id):
        raise DatasetError(f"session key {key!r} is not '<item id>{_KEY_SEP}<arm>' with arm in {', '.join(ARMS)}")
    return item_id, arm


def _transcript_text(item: Item) -> str:
    return f'Transcript of the recording: "{item.transcript}"\n{item.question}'


def conditioning_subset(dataset: Dataset, arm: str, count: int) -> set[str]:
    """The items an arm other than audio runs on when `count` > 0: the first `count` of its eligible items
    (speech items for the transcript arm) dealt round-robin by kind in manifest order; every eligible item
    when `count` is 0 or more than there are."""
    eligible = [it for it in dataset.items if arm != "transcript" or it.transcript is not None]
    if count <= 0 or count >= len(eligible):
        return {it.id for it in eligible}
    queues: dict[str, list[str]] = {}
    for it in eligible:
        queues.setdefault(it.kind, []).append(it.id)
    dealt = [q[depth] for depth in range(max(len(q) for q in queues.values())) for q in queues.values()
             if depth < len(q)]
    return set(dealt[:count])


def prepare_arms(dataset: Dataset, arms: Iterable[str], work_dir: str | Path, *, cache: str | Path | None = None,
                 conditioning_items: int = 0, only: Iterable[tuple[str, str]] | None = None) -> list[ArmRequest]:
    """One ArmRequest per item and arm, in manifest order; stores the wire audio in `cache` and names each
    request's clip in `work_dir/clips.jsonl`. Blocks.

    WAV and MP3 clips are sent as they are (the dataset's file); FLAC and OGG are decoded to 16-bit WAV.
    Silence is a zero WAV of the clip's rate, channels and frames. Decoded and silent clips go into the clip
    cache `cache` (default: `work_dir`), once per content; with `cache` given, the entry made from each clip
    content and silence shape is kept in its `facts/`, so that a later run finds the entry without decoding the
    clip again. The transcript arm exists only for speech items.
    With `conditioning_items` > 0 the silence and transcript arms hold only conditioning_subset's items;
    `only` keeps just these (item id, arm) pairs.
    """
    arms = list(arms)
    for arm in arms:
        if arm not in ARMS:
            raise DatasetError(f"arm {arm!r} is not one of {', '.join(ARMS)}")
    work = Path(work_dir).resolve()
    clips = ClipCache(cache if cache is not None else work)
    made_before = (FactsCache(clips.facts_folder() / _MADE_FACTS, _Made, _FACTS_VERSION) if cache is not None
                   else None)
    subsets = {arm: conditioning_subset(dataset, arm, conditioning_items) for arm in arms if arm != "audio"}
    wanted = set(only) if only is not None else None
    out: list[ArmRequest] = []
    sent: list[ClipSent] = []
    # clip path or silence shape -> (wire file, sha256, bytes), so shared clips convert and hash once
    made: dict[str, tuple[Path, str, int]] = {}
    for item in dataset.items:
        for arm in arms:
            if (arm in subsets and item.id not in subsets[arm]) or (wanted is not None and (item.id, arm) not in wanted):
                continue
            key = session_key(item.id, arm)
            if arm == "transcript":
                if item.transcript is None:
                    continue
                out.append(ArmRequest(key=key, item_id=item.id, arm="transcript", text=_transcript_text(item),
                                      audio_path=None, source_format=item.container, wire_format=None,
                                      audio_seconds=0.0, audio_bytes=0))
                continue
            shape = item.audio if arm == "audio" else f"silence:{item.sample_rate_hz}:{item.channels}:{item.frames}"
            if shape not in made:
                made[shape] = (_wire_audio(dataset.root, item, clips, made_before) if arm == "audio" else
                               _made_wav(clips, made_before, shape, partial(_silence, item)))
            wire, digest, size = made[shape]
            fmt = wire.suffix.lstrip(".")
            sent.append(ClipSent(key=key, sha256=digest, bytes=size, format=fmt, path=str(wire)))
            out.append(ArmRequest(key=key, item_id=item.id, arm="audio" if arm == "audio" else "silence", text=item.question, audio_path=str(wire),
                                  source_format=item.container, wire_format=fmt,
                                  audio_seconds=item.frames / item.sample_rate_hz, audio_bytes=size))
    append_manifest(work, sent)
    if made_before is not None:
        made_before.save()
    return out


def _wire_audio(root: Path, item: Item, clips: ClipCache, made_before: FactsCache[_Made] | None,
                ) -> tuple[Path, str, int]:
    """The clip as sent, its sha256 and size: the dataset's own file (its manifest hash, checked at load)
    when sent as it is, else its PCM as 16-bit WAV in the cache."""
    source = root / item.audio
    if item.container in _WIRE_CONTAINERS:
        return source.resolve(), item.sha256, item.bytes

    def decoded() -> tuple[np.ndarray, int]:
        pcm, rate = sf.read(str(source), dtype="int16", always_2d=True)
        return pcm, int(rate)

    # Keyed by the clip's content (its sha256, checked at load): the WAV is a function of it.
    return _made_wav(clips, made_before, f"clip:{item.sha256}", decoded)


def _silence(item: Item) -> tuple[np.ndarray, int]:
    return np.zeros((item.frames, item.channels), dtype=np.int16), item.sample_rate_hz


def _made_wav(clips: ClipCache, made_before: FactsCache[_Made] | None, source: str,
              pcm_of: Callable[[], tuple[np.ndarray, int]]) -> tuple[Path, str, int]:
    """The cache entry made from `source` before, while it is there whole; else made now from `pcm_of()`."""
    kept = made_before.get(source) if made_before is not None else None
    if kept is not None:
        path = clips.existing(kept.sha256, "wav", kept.bytes)
        if path is not None:
            return path, kept.sha256, kept.bytes
    path, digest, size = _put_wav(clips, *pcm_of())
    if made_before is not None:
        made_before.put(source, _Made(sha256=digest, bytes=size))
    return path, digest, size


def _put_wav(clips: ClipCache, pcm: np.ndarray, rate: int) -> tuple[Path, str, int]:
    buf = io.BytesIO()
    sf.write(buf, pcm, rate, format="WAV", subtype="PCM_16")
    data = buf.getvalue()
    path, digest = clips.put(data, "wav")
    return path, digest, len(data)


def interleave_kinds(requests: Sequence[ArmRequest], dataset: Dataset) -> list[ArmRequest]:
    """The requests dealt round-robin by item kind (each kind in manifest order), so that any run of
    consecutive rows as long as the number of kinds asks every kind: AIPerf's sequential sampler sends
    rows in file order, and a short run would otherwise ask only the manifest's first kinds."""
    kinds = {it.id: it.kind for it in dataset.items}
    queues: dict[str, list[ArmRequest]] = {}
    for req in requests:
        queues.setdefault(kinds[req.item_id], []).append(req)
    out: list[ArmRequest] = []
    for depth in range(max((len(q) for q in queues.values()), default=0)):
        out += [q[depth] for q in queues.values() if depth < len(q)]
    return out


def write_aiperf_input(requests: Iterable[ArmRequest], path: str | Path) -> Path:
    """Write an AIPerf `single_turn` JSONL file: session_id, text and (unless transcript) audio. Blocks."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = bytearray()
    for req in requests:
        line: dict[str, str] = {"session_id": req.key, "text": req.text}
        if req.audio_path is not None:
            line["audio"] = req.audio_path
        _encoder.encode_into(line, buf, len(buf))
        buf.extend(b"\n")
    out.write_bytes(bytes(buf))
    return out
