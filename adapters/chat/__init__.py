"""Clients that ask one question at a time: OpenAI-chat over HTTP, and a native JSON-lines worker."""

from adapters.chat.http import ChatClient, ChatReply
from adapters.chat.native import NativeReply, NativeWorker

__all__ = ["ChatClient", "ChatReply", "NativeWorker", "NativeReply"]
