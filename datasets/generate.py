"""Generate a shipped dataset deterministically and offline: its clips, manifest.jsonl and card (README.md).
Usage and the generation-time tools it needs (espeak-ng, flite, sox): docs/datasets.md.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import gen_v1
import gen_v2
import msgspec
import numpy as np
import soundfile as sf
from gen_signals import Clip, Q

from orchestrator.dataset import MANIFEST, Item, probe_audio

# The same tools give the same PCM and the same manifest. These are generation-time tools, never runtime dependencies
# of aqbench: the committed files are the dataset, and the loader never runs this module. `--heldout` draws from
# audioqa-v2's other banks (gen_v2_banks.py) to check that an engine generalises.
SETS = {gen_v1.NAME: gen_v1, gen_v2.NAME: gen_v2}
TOOLS = ("espeak-ng", "flite", "sox")
_SUBTYPE = {"wav": ("WAV", "PCM_16"), "flac": ("FLAC", "PCM_16"), "ogg": ("OGG", "VORBIS"),
            "mp3": ("MP3", "MPEG_LAYER_III")}
_OGG_SERIAL = 0x61715131  # fixed stream serial: libsndfile picks a random one per file


# --- writing ------------------------------------------------------------------------------------

def _ogg_crc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def _fix_ogg_serial(path: Path) -> None:
    """Rewrite every Ogg page with a fixed stream serial and its CRC, so the bytes are reproducible."""
    data = bytearray(path.read_bytes())
    pos = 0
    while pos < len(data):
        if data[pos:pos + 4] != b"OggS":
            raise RuntimeError(f"{path}: no Ogg page at byte {pos}")
        nseg = data[pos + 26]
        end = pos + 27 + nseg + sum(data[pos + 27: pos + 27 + nseg])
        data[pos + 14: pos + 18] = _OGG_SERIAL.to_bytes(4, "little")
        data[pos + 22: pos + 26] = bytes(4)
        data[pos + 22: pos + 26] = _ogg_crc(bytes(data[pos:end])).to_bytes(4, "little")
        pos = end
    path.write_bytes(bytes(data))


def write_clip(path: Path, x: np.ndarray, rate: int, container: str) -> None:
    peak = float(np.max(np.abs(x)))
    if peak > 0.99:
        raise ValueError(f"{path.name}: peak {peak:.3f} would clip")
    fmt, subtype = _SUBTYPE[container]
    # Quantise to int16 here so every container starts from the same PCM.
    pcm = np.round(x * 32767).astype(np.int16)
    sf.write(str(path), pcm, rate, format=fmt, subtype=subtype)
    if container == "ogg":
        _fix_ogg_serial(path)


def generate(out: Path, name: str = gen_v2.NAME, *, seed: int | None = None, heldout: bool = False,
             per_kind: int | None = None) -> list[Item]:
    """Write every clip of set `name`, its manifest.jsonl and card into `out` (created; old audio replaced).

    `seed`, `heldout` and `per_kind` draw audioqa-v2 differently (audioqa-v1 is fixed). Blocks.
    """
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise SystemExit(f"generate.py: missing tools: {', '.join(missing)} (apt-get install espeak-ng flite sox)")
    if name == gen_v1.NAME:
        if seed is not None or heldout or per_kind is not None:
            raise SystemExit("generate.py: audioqa-v1 is fixed: --seed, --heldout and --per-kind draw audioqa-v2 only")
        clip_list, questions = gen_v1.clips(), gen_v1.questions()
    else:
        clip_list, questions = gen_v2.recipes(gen_v2.SEED if seed is None else seed, heldout=heldout,
                                              per_kind=per_kind)
    audio_dir = out / "audio"
    if audio_dir.exists():
        shutil.rmtree(audio_dir)
    audio_dir.mkdir(parents=True)
    clips = {c.name: c for c in clip_list}
    used = {q.clip for q in questions}
    for clip in clips.values():
        if clip.name in used:
            write_clip(audio_dir / f"{clip.name}.{clip.container}", clip.build(clip.rate), clip.rate, clip.container)
    items = [_item(out, clips[q.clip], q) for q in questions]
    enc = msgspec.json.Encoder()
    (out / MANIFEST).write_bytes(b"".join(enc.encode(it) + b"\n" for it in items))
    write_card(out, items, name, seed=seed, heldout=heldout)
    return items


def _item(out: Path, clip: Clip, q: Q) -> Item:
    rel = f"audio/{clip.name}.{clip.container}"
    props = probe_audio(out / rel)
    answer = q.answer
    if answer == "PASSAGE_SECONDS":  # audioqa-v1: whole seconds
        answer = f"{round(props.duration_s)}"
    elif answer == "CLIP_SECONDS":
        answer = f"{round(props.duration_s, 1):g}"
    return Item(
        id=q.id, audio=rel, question=q.question, answer=answer, variants=list(q.variants),
        choices=list(q.choices), choice_aliases={k: v for k, v in q.aliases.items() if k in q.choices},
        scoring=q.scoring, tolerance=q.tolerance, kind=q.kind, transcript_answerable=q.transcript_answerable,
        transcript=clip.transcript, recipe=clip.recipe, **msgspec.structs.asdict(props),
    )


def _tool_versions() -> dict[str, str]:
    def first_line(cmd: list[str]) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True)
        text = (out.stdout + out.stderr).strip().splitlines()
        return text[0].strip() if text else "unknown"

    flite = first_line(["flite", "--version"])
    flite = next((ln.strip() for ln in subprocess.run(["flite", "--version"], capture_output=True,
                                                      text=True).stdout.splitlines() if "version" in ln), flite)
    return {
        "espeak-ng": first_line(["espeak-ng", "--version"]).split("  Data at")[0],
        "flite": flite,
        "sox": first_line(["sox", "--version"]).removeprefix("sox:").strip(),
        "numpy": np.__version__,
        "soundfile": f"{sf.__version__} (libsndfile {sf.__libsndfile_version__})",
    }


_V1_PROVENANCE = (
    "Every clip is synthesised by `datasets/generate.py` (run `python datasets/generate.py --set audioqa-v1` to "
    "regenerate; the same tools give the same PCM and the same manifest). Tones, beeps, sweeps and "
    "noise are computed with numpy (noise from a seeded PCG64 generator); speech comes from Debian "
    "`flite` (voices kal, kal16, awb, rms, slt) and `espeak-ng` (en+f3, en+m3, de, es, fr), "
    "resampled by `sox -D ... rate -v` (no dither) and trimmed to the first and last sample above "
    "2 % of the peak, so timing labels are exact. Clips are quantised to 16-bit before encoding; "
    "Ogg files get a fixed stream serial so their bytes are reproducible. No third-party recordings "
    "or datasets are included.")


def _v2_provenance(seed: int, heldout: bool) -> str:
    return (
        f"Every clip is synthesised by `datasets/generate.py` from seed {seed} (run `python datasets/generate.py"
        f"{' --heldout' if heldout else ''} --seed {seed}` to regenerate; the same tools give the same PCM and the "
        "same manifest). Each kind of audioqa-v1 is drawn anew: beep counts 1-9 at 440-2000 Hz with random on/off "
        "times (some over pink noise, some in stereo), two or three tones 3-12 semitones apart, frequencies "
        "120-3200 Hz, tone lengths 0.3-3 s, linear and exponential sweeps and stepped melodies, loudness steps of "
        "8-20 dB, pink, white and brown noise, hum, chords, faint sounds down to -45 dBFS, left, right or both "
        "channels (some with bleed), speech and beep onsets 0.3-3.5 s, three or four words around a beep, one or "
        "two speakers of either sex, slow and fast renditions, and five languages. Speech comes from Debian `flite` "
        "(kal16, slt, awb, rms, some at other F0 targets and duration stretches) and `espeak-ng` (English "
        "variants en, en-us, en-gb-scotland, f1-f5, m1-m7, Annie, Andrea, steph, john, michael at speeds 95-250 "
        "and pitches 35-65; de, es, fr, it), with sentences and question wordings drawn from "
        f"`datasets/gen_v2_banks.py` ({'held-out' if heldout else 'shipped'} banks). Speech is resampled by "
        "`sox -D ... rate -v` (no dither) and trimmed to the first and last sample above 2 % of the peak, so "
        "timing labels are exact. Clips are quantised to 16-bit before encoding; Ogg files get a fixed stream "
        "serial so their bytes are reproducible. No third-party recordings or datasets are included.")


def write_card(out: Path, items: list[Item], name: str = gen_v2.NAME, *, seed: int | None = None,
               heldout: bool = False) -> None:
    """Write the dataset card README.md: provenance, tools, licence, hashing rule and the item table."""
    n = len(items)
    not_text = sum(not it.transcript_answerable for it in items)
    clips = {it.audio: it for it in items}
    total_s = sum(it.duration_s for it in clips.values())
    total_bytes = sum(it.bytes for it in clips.values())
    title = name if not heldout else f"{name} held-out draw (seed {seed})"
    provenance = _V1_PROVENANCE if name == gen_v1.NAME else _v2_provenance(
        gen_v2.SEED if seed is None else seed, heldout)
    kinds: dict[str, int] = {}
    for it in items:
        kinds[it.kind] = kinds.get(it.kind, 0) + 1
    lines = [
        f"# {title}: a generated audio question-answering set",
        "",
        f"{n} questions over {len(clips)} clips ({total_s:.1f} s, {total_bytes / 1e6:.2f} MB). "
        f"{not_text} of {n} items ({100 * not_text / n:.0f} %) cannot be answered from a transcript: they ask "
        "about counts, pitch, frequency, duration, direction, loudness, speech presence, silence, channels, "
        "timing, order around a beep, speaker sex and count, speaking rate and language.",
        "",
        *([] if name == gen_v1.NAME else [
            "Items by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
            + ".", ""]),
        "## Provenance",
        provenance,
        "",
        "Tools used for this version:",
        "",
        *[f"- {k}: {v}" for k, v in _tool_versions().items()],
        "",
        "## Licence",
        "Generated by the aqbench project and released under the project's licence (Apache-2.0). The "
        "synthesisers' licences (flite: BSD-style; espeak-ng: GPL-3.0) cover the programs, not the audio "
        "they produce; no recorded voices or third-party data are included.",
        "",
        "## Manifest",
        "`manifest.jsonl` holds one item per line (`orchestrator.dataset.Item`): id, audio (relative path), "
        "question, answer, accepted variants, choices and per-choice aliases, scoring (`exact`, `choice`, "
        "`numeric`) and tolerance, kind, transcript_answerable, transcript (speech clips), recipe, and the "
        "clip's container, codec, sample rate, channels, frames, duration, bytes, sha256 of the file and "
        "`pcm_sha256`: sha256 of the decoded frames as interleaved little-endian int16 "
        "(`soundfile.read(dtype='int16', always_2d=True)`). `aqbench dataset check` verifies all of it.",
        "",
        "## Items",
        "",
        "| id | kind | clip | format | Hz | ch | s | question | answer | scoring | transcript answers? |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for it in items:
        gold = it.answer + (f" ±{it.tolerance:g}" if it.tolerance else "")
        lines.append(f"| {it.id} | {it.kind} | {Path(it.audio).stem} | {it.container} | {it.sample_rate_hz} | "
                     f"{it.channels} | {it.duration_s:.2f} | {it.question} | {gold} | {it.scoring} | "
                     f"{'yes' if it.transcript_answerable else 'no'} |")
    (out / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=None, help="output folder (default: datasets/<set>)")
    parser.add_argument("--set", dest="name", choices=sorted(SETS), default=gen_v2.NAME, help="which dataset")
    parser.add_argument("--seed", type=int, default=None, help=f"audioqa-v2's draw (default {gen_v2.SEED})")
    parser.add_argument("--heldout", action="store_true", help="draw from the held-out banks (audioqa-v2)")
    parser.add_argument("--per-kind", type=int, default=None, help="at most this many questions per kind")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / args.name
    items = generate(out, args.name, seed=args.seed, heldout=args.heldout, per_kind=args.per_kind)
    print(f"wrote {len(items)} items to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
