"""Decode wav/mp3/flac/ogg bytes to float32 PCM with soundfile, resample, and encode WAV.

Blocking (CPU and libsndfile): call it from a worker thread. Knows nothing about HTTP or questions.
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass
from math import gcd

import numpy as np
import soundfile as sf

__all__ = [
    "SUPPORTED_FORMATS",
    "AudioDecodeError",
    "DecodedAudio",
    "decode_audio",
    "encode_wav",
    "resample",
    "to_mono",
]

# Name in the request -> libsndfile container name that must be found in the bytes.
SUPPORTED_FORMATS: dict[str, str] = {"wav": "WAV", "mp3": "MP3", "flac": "FLAC", "ogg": "OGG"}


class AudioDecodeError(ValueError):
    """The bytes are not audio of the declared format (the message says why)."""


@dataclass(frozen=True, slots=True)
class DecodedAudio:
    """Decoded PCM, shape (frames, channels), float32 in [-1, 1], and what the container said."""

    samples: np.ndarray
    sample_rate_hz: int
    format: str
    bytes: int

    @property
    def channels(self) -> int:
        return int(self.samples.shape[1])

    @property
    def frames(self) -> int:
        return int(self.samples.shape[0])

    @property
    def seconds(self) -> float:
        return self.frames / self.sample_rate_hz


def decode_audio(data: bytes, fmt: str) -> DecodedAudio:
    """Decode `data` declared as `fmt` (wav|mp3|flac|ogg).

    Raises:
        AudioDecodeError: unknown format, bytes of another container, undecodable or empty audio.
    """
    fmt = fmt.lower()
    if fmt not in SUPPORTED_FORMATS:
        raise AudioDecodeError(
            f"unsupported audio format {fmt!r}; supported: {', '.join(SUPPORTED_FORMATS)}")
    if not data:
        raise AudioDecodeError("audio is empty (0 bytes)")
    if fmt == "wav":
        _check_wav_complete(data)
    try:
        with sf.SoundFile(io.BytesIO(data)) as f:
            found = f.format
            rate = int(f.samplerate)
            samples = f.read(dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioDecodeError(f"audio declared as {fmt} ({len(data)} bytes) could not be decoded: "
                               f"{_why(exc)}") from exc
    if found != SUPPORTED_FORMATS[fmt]:
        raise AudioDecodeError(f"audio declared as {fmt} is a {found.lower()} container; "
                               f"declare format {found.lower()!r} or send {fmt} bytes")
    if samples.shape[0] == 0:
        raise AudioDecodeError(f"audio ({fmt}, {len(data)} bytes) decodes to 0 frames")
    if not np.all(np.isfinite(samples)):
        raise AudioDecodeError(f"audio ({fmt}) contains non-finite samples")
    return DecodedAudio(samples=samples, sample_rate_hz=rate, format=fmt, bytes=len(data))


# libsndfile names the file it opened: for bytes in memory that is a Python repr, which means nothing
# to a client. Its own reason (`error_string`) is what the message keeps.
_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")
# A WAV written while streaming may leave its sizes unset (0 or 0xFFFFFFFF): then nothing is checked.
_UNKNOWN_SIZES = (0, 0xFFFFFFFF)


def _why(exc: Exception) -> str:
    reason = getattr(exc, "error_string", "") or str(exc)
    return _REPR.sub("the audio", reason).strip()


def _check_wav_complete(data: bytes) -> None:
    """libsndfile reads a cut WAV without complaint (fewer frames): compare its data chunk's declared
    size with the bytes present and refuse a truncated file."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return  # not a RIFF/WAVE header: libsndfile reports what it is
    pos = 12
    while pos + 8 <= len(data):
        chunk, size = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        if chunk == b"data":
            present = len(data) - pos - 8
            if size not in _UNKNOWN_SIZES and present < size:
                raise AudioDecodeError(
                    f"audio declared as wav is truncated: its data chunk declares {size} bytes but only "
                    f"{present} are present ({len(data)} bytes in all); send the whole file")
            return
        pos += 8 + size + (size & 1)
    declared = struct.unpack_from("<I", data, 4)[0] + 8
    if declared not in (8, 0xFFFFFFFF + 8) and len(data) < declared:
        raise AudioDecodeError(f"audio declared as wav is truncated: its header declares {declared} bytes but "
                               f"only {len(data)} are present, and no data chunk was found; send the whole file")


def to_mono(samples: np.ndarray) -> np.ndarray:
    """Average channels of a (frames, channels) array into one float32 vector."""
    if samples.ndim == 1:
        return samples.astype(np.float32, copy=False)
    mono: np.ndarray = samples.mean(axis=1, dtype=np.float32)
    return mono


def resample(x: np.ndarray, src_hz: int, dst_hz: int) -> np.ndarray:
    """Polyphase resampling of a 1-D signal (anti-aliased); returns float32."""
    if src_hz == dst_hz:
        return x.astype(np.float32, copy=False)
    from scipy.signal import resample_poly  # imported here: scipy is slow to import

    g = gcd(int(src_hz), int(dst_hz))
    out: np.ndarray = resample_poly(x, dst_hz // g, src_hz // g).astype(np.float32)
    return out


def encode_wav(samples: np.ndarray, sample_rate_hz: int) -> bytes:
    """16-bit PCM WAV bytes of a (frames,) or (frames, channels) float array."""
    buf = io.BytesIO()
    sf.write(buf, samples, sample_rate_hz, format="WAV", subtype="PCM_16")
    return buf.getvalue()
