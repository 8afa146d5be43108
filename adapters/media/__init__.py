"""Audio bytes in, float PCM out: decoding, resampling and encoding for the reference engine."""

from adapters.media.audio import (
    SUPPORTED_FORMATS,
    AudioDecodeError,
    DecodedAudio,
    decode_audio,
    encode_wav,
    resample,
    to_mono,
)

__all__ = [
    "SUPPORTED_FORMATS",
    "AudioDecodeError",
    "DecodedAudio",
    "decode_audio",
    "encode_wav",
    "resample",
    "to_mono",
]
