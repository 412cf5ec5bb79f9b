"""Services that keep the conversation themselves: the id a response gives, sent back.

Some chat services take only the new question and keep the history server-side under an
id they hand out (LangServe's and Dify's chat endpoints, many in-house services): the first
turn is sent without one, its response carries the id, and each later turn sends it back.
A target says where the id is in a response (a JMESPath expression) and where it goes back
(a header, a query parameter or a top-level key of the JSON body)::

    [targets.conversation]
    id = "conversation_id"
    send = "header"
    name = "X-Conversation-Id"

The id comes from outside, so it passes a border: 1 to :data:`MAX_ID_CHARS` visible ASCII
characters (a string or an integer), nothing a header, a URL or a log could be bent by.
A response without one, before any was given, is a ``bad_response`` naming the field: the
next turn would start another conversation. A later response without one keeps the one
given before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from jmespath import visitor
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

from evaluator.errors import BadResponseError
from evaluator.targets.request import OutgoingRequest, encode_body

__all__ = ["MAX_ID_CHARS", "ConversationIds", "SendIn"]

#: longest conversation id taken from a response
MAX_ID_CHARS = 256
#: where the id goes back: a header, a query parameter, a top-level body key
SendIn = Literal["header", "query", "body"]

_USABLE = re.compile(rf"[\x21-\x7e]{{1,{MAX_ID_CHARS}}}")
_FIELD = "conversation_id"


@dataclass(frozen=True)
class ConversationIds:
    """Where a stateful service's conversation id is read and where it is sent back."""

    #: the expression finding the id in a response body (or a stream's fields event)
    expression: ParsedResult
    send: SendIn
    #: the header, query parameter or body key it is sent back in
    name: str
    _interpreter: visitor.TreeInterpreter = field(
        default_factory=visitor.TreeInterpreter, repr=False, compare=False
    )

    def identity(self) -> dict[str, str]:
        """What identifies the setting for the config hash."""
        return {"id": self.expression.expression, "send": self.send, "name": self.name}

    def read(self, body: object, known: str | None) -> str | None:
        """The conversation id in ``body``; ``known`` (the one given before) when the body
        has none.

        Raises:
            BadResponseError: the id is not usable, or no id was ever given.
        """
        try:
            # not expression.search: it makes an interpreter per call, a reference cycle
            value = self._interpreter.visit(self.expression.parsed, body)
        except JMESPathError as exc:
            raise self._fail(f"failed: {exc}") from None
        if value is None:
            if known is None:
                raise self._fail(
                    "matched nothing (null): a service that keeps the conversation must give "
                    "its id in the first turn's response"
                )
            return known
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not _USABLE.fullmatch(value):
            raise self._fail(
                f"gave no usable id: 1 to {MAX_ID_CHARS} visible ASCII characters "
                "(letters, digits, punctuation; no space or control) are sent back"
            )
        return value

    def _fail(self, problem: str) -> BadResponseError:
        source = self.expression.expression
        return BadResponseError(
            f"response.{_FIELD} expression {json.dumps(source)} {problem}",
            field=_FIELD,
            expression=source,
        )

    def sent_back(self, request: OutgoingRequest, service_id: str) -> OutgoingRequest:
        """``request`` carrying the conversation id where the target says."""
        if self.send == "header":
            return msgspec.structs.replace(
                request, own_headers={**request.own_headers, self.name: service_id}
            )
        if self.send == "query":
            return msgspec.structs.replace(
                request, url=request.url.update_query({self.name: service_id})
            )
        body: Any = json.loads(request.content or b"{}")
        body[self.name] = service_id  # the configuration checked the body is an object
        content = encode_body(body)
        return msgspec.structs.replace(request, content=content)
