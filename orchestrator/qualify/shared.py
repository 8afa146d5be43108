"""Reference answers one qualify run already has, by reference key: models whose references are the same
share them, so the reference is asked once. Holds answers; judges nothing."""

from __future__ import annotations

import msgspec

from orchestrator.dataset import ArmRequest
from orchestrator.qualify.answers import Answered

__all__ = ["AskedBaseline", "SharedBaselines"]


class AskedBaseline(msgspec.Struct, frozen=True):
    """What the reference said to one request, as the answer book judges it (the answer, not the verdict)."""

    request: ArmRequest
    got: Answered


class SharedBaselines:
    """The reference answers of one qualify run by reference key, with the model whose run asked them."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[str, list[AskedBaseline]]] = {}

    def get(self, key: str) -> tuple[str, list[AskedBaseline]] | None:
        return self._by_key.get(key)

    def put(self, key: str, model: str, asked: list[AskedBaseline]) -> None:
        self._by_key.setdefault(key, (model, asked))
