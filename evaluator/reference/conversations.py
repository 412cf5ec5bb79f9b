"""Conversations the reference service keeps itself: the stateful mode of ``/rag/session``.

Some services take only the new question and keep the conversation server-side under an
id they hand out (LangServe's and Dify's chat endpoints, many in-house ones). The first
turn comes without an id and the answer carries a new one; each later turn sends it back
(``X-Conversation-Id``) and is read with the questions kept under it. Bounded: at most
:data:`MAX_CONVERSATIONS` are kept (the oldest is forgotten first) and each keeps its last
:data:`MAX_KEPT_TURNS` questions.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict

__all__ = ["MAX_CONVERSATIONS", "MAX_KEPT_TURNS", "ConversationStore", "UnknownConversationError"]

MAX_CONVERSATIONS = 10_000
MAX_KEPT_TURNS = 32


class UnknownConversationError(KeyError):
    """A conversation id the service never gave out, or has forgotten."""


class ConversationStore:
    """The questions asked so far in each conversation, by its id; safe across threads."""

    def __init__(self, capacity: int = MAX_CONVERSATIONS) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._questions: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    def start(self) -> str:
        """A new conversation's id."""
        conversation_id = secrets.token_hex(12)
        with self._lock:
            self._questions[conversation_id] = ()
            while len(self._questions) > self._capacity:
                self._questions.popitem(last=False)
        return conversation_id

    def earlier(self, conversation_id: str) -> tuple[str, ...]:
        """The questions asked so far in the conversation, oldest first.

        Raises:
            UnknownConversationError: no such conversation is kept.
        """
        with self._lock:
            try:
                return self._questions[conversation_id]
            except KeyError:
                raise UnknownConversationError(conversation_id) from None

    def asked(self, conversation_id: str, question: str) -> None:
        """Keep ``question`` as the conversation's latest (its last MAX_KEPT_TURNS kept)."""
        with self._lock:
            if conversation_id in self._questions:
                kept = (*self._questions[conversation_id], question)[-MAX_KEPT_TURNS:]
                self._questions[conversation_id] = kept
