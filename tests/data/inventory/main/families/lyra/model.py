"""Lyra's native builder for its older text generations."""


def build(request, writer):
    writer.set_header(family="lyra", task=request.task, backend=request.backend)
    writer.add_bytes("engine.plan", build_engine(request))
    writer.add_json("runtime.json", {"precision": request.precision})
