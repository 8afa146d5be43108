"""Audio-QA datasets: the manifest and its verifying loader, the arms and their AIPerf export (sets.py), the
normal form their answers are checked in (answer_text.py), the clips as sent (clip_cache.py), and the facts about
clips kept between runs (facts_cache.py)."""

from orchestrator.dataset.answer_text import normalize
from orchestrator.dataset.sets import (
    CONTAINERS,
    KINDS,
    MANIFEST,
    ArmRequest,
    AudioProps,
    ConditioningPair,
    Dataset,
    Item,
    conditioning_subset,
    interleave_kinds,
    load_dataset,
    parse_session_key,
    prepare_arms,
    probe_audio,
    resolve_dataset_path,
    session_key,
    write_aiperf_input,
)

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
    "normalize",
]
