"""Omnivox builder: the thinker, and the codec that would voice it."""


def build(request, writer):
    writer.add_bytes("thinker.plan", build_thinker(request))
    writer.add_bytes("code2wav.plan", build_codec(request))
    writer.add_json("runtime.json", {"precision": "bf16"})
