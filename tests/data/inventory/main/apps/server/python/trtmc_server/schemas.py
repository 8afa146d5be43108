"""Request shapes the served chat route accepts."""

from typing import Literal

from pydantic import BaseModel


class Strict(BaseModel):
    model_config = {"extra": "forbid"}


class TextPart(Strict):
    type: Literal["text"]
    text: str


class Message(Strict):
    role: str
    content: str | list[TextPart]


class ChatRequest(Strict):
    model: str
    messages: list[Message]
