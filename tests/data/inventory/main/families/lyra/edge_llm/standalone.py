"""Lyra 4 through Edge-LLM: one standalone bundle with the checkpoint's towers."""


def prepare(request):
    if (request.task not in {"text_generation", "audio_text_to_text"}
            or request.precision != "fp16"
            or request.max_batch_size != 1 or request.tensor_parallel_size != 1):
        raise ValueError("Lyra 4 on Edge-LLM builds fp16, one GPU, one request at a time")
    return {"audio": True}
