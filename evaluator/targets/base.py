"""The target protocol and the parser of the default response contract (docs/targets.md)."""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Annotated, Any, Literal, Protocol
from urllib.parse import urlsplit

import msgspec

from evaluator.border import MAX_NUMBER
from evaluator.errors import BadResponseError
from evaluator.models import Case, Citation, Dialogue, OutOfRange, Retrieved, TargetResponse
from evaluator.targets import figures

__all__ = [
    "HistorySource",
    "Target",
    "decode_default_response",
    "default_target_name",
    "parse_default_response",
]

#: Where the answers in a conversation's history come from: the target's own earlier
#: answers (``service``, what a user sees) or the golden set's scripted ones (``scripted``,
#: so one wrong early answer does not fail every later turn; a turn without one falls back
#: to the target's). A target without the attribute is ``service``.
HistorySource = Literal["service", "scripted"]


#: out_of_range by (timings dropped, scores dropped)
_DROPS: Mapping[tuple[bool, bool], tuple[OutOfRange, ...]] = {
    (False, False): (),
    (True, False): ("timings",),
    (False, True): ("scores",),
    (True, True): ("timings", "scores"),
}


def default_target_name(url: str) -> str:
    """The default ``target`` label: the URL's ``host:port``."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


class Target(Protocol):
    """A system under test: answers one question with ranked evidence and an answer.

    Implementations raise only :class:`evaluator.errors.TargetError` subclasses.
    """

    #: the ``target`` label: host:port, or the callable's name, or the configured name
    name: str

    def identity(self) -> Mapping[str, Any]:
        """What identifies the target for the config hash: never a secret."""
        ...

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        """Send the case's question, asking for the top ``k`` items; a conversation's turn
        comes with ``dialogue``, the conversation so far, to send as the target says."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def parse_default_response(body: object, *, max_ranked_ids: int | None = None) -> TargetResponse:
    """Map a body in the default contract onto a :class:`TargetResponse`.

    Args:
        body: the decoded JSON.
        max_ranked_ids: read only the first this many ``retrieved`` items (the target's:
            the runner keeps no more). A legal response may rank
            350,000 ids; building and checking an object for each would cost the daemon
            about a second of interpreter time per response, which its other jobs and
            ``/healthz`` wait for.

    Raises:
        BadResponseError: naming the field that is missing or of the wrong type.
    """
    if type(body) is not dict and not isinstance(body, Mapping):
        raise BadResponseError(
            f"response is {_type_name(body)}, expected a JSON object", field="response"
        )
    retrieved, scores_dropped = _parse_retrieved(body.get("retrieved", []), max_ranked_ids)
    timings, timings_dropped = _parse_timings(body.get("timings", {}))
    answer = body.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise BadResponseError(
            f"field 'answer' is {_type_name(answer)}, expected a string", field="answer"
        )
    return TargetResponse(
        retrieved=retrieved,
        answer=answer,
        citations=_parse_citations(body.get("citations", [])),
        timings=timings,
        out_of_range=_DROPS[timings_dropped, scores_dropped],
    )


#: a stage's seconds in the range :func:`figures.stage_seconds` keeps
_StageSeconds = Annotated[float, msgspec.Meta(ge=0, le=figures.MAX_STAGE_SECONDS)]


class _CommonBody(msgspec.Struct):
    """The default contract's common shape, every figure in range: what
    :func:`decode_default_response` reads in C (unknown fields ignored, as the parser does)."""

    retrieved: tuple[Retrieved, ...] | None = ()
    answer: str | None = None
    citations: tuple[int | str, ...] | None = ()
    timings: dict[str, _StageSeconds] | None = None


_decode_common = msgspec.json.Decoder(_CommonBody).decode
_score_of = attrgetter("score")


def decode_default_response(
    content: bytes, *, max_ranked_ids: int | None = None
) -> TargetResponse | None:
    """A JSON body of the default contract decoded straight into its fields, when it has the
    contract's common shape; None for any other body, which the caller decodes and maps with
    :func:`parse_default_response`, the contract's definition.

    The common shape: an object whose ``retrieved`` items are objects with a string id, a
    number or null score within the border's range and a string or null text; ``answer`` a
    string or null; ``citations`` positions or ids; ``timings`` numbers of seconds in
    range. Every such body maps here to the :class:`TargetResponse` the parser gives it
    (``tests/targets/test_default_decoding.py`` holds the two equal over generated bodies);
    what the parser alone reads (ids that are numbers, bare-string items, scores that are
    not numbers, figures out of range, dropped and counted) and every error it names come
    from the parser. Why a second reading: decoding and mapping a common body in Python
    cost about 70,000 instructions a case, this about 34,000, and the CPU goal of
    docs/performance.md was missed by that margin (docs/architecture.md lists the seam).
    """
    try:
        body = _decode_common(content)
    except (msgspec.MsgspecError, RecursionError):
        return None
    retrieved = body.retrieved or ()
    if max_ranked_ids is not None:
        retrieved = retrieved[:max_ranked_ids]
    # a score beyond the border's range is dropped and counted: the parser's part
    if max(map(abs, filter(None, map(_score_of, retrieved))), default=0.0) > MAX_NUMBER:
        return None
    return TargetResponse(
        retrieved=retrieved,
        answer=body.answer,
        citations=body.citations or (),
        timings=body.timings or {},
    )


def _parse_retrieved(
    value: object, max_ranked_ids: int | None
) -> tuple[tuple[Retrieved, ...], bool]:
    """The ranked items, and whether a score out of range was dropped (a score that is not
    a number is None, as the contract allows)."""
    items: list[Retrieved] = []
    dropped = False
    for i, item in enumerate(_ranked_list(value, max_ranked_ids)):
        # exact-type checks first: JSON gives dict, str, float; the ABC checks are the
        # fallback for other mappings (a mapped target's own objects), in _any_item
        if type(item) is dict:
            doc_id = item.get("id")
            score = item.get("score")
            text = item.get("text")
            if type(doc_id) is str:
                if type(score) is not float or not -MAX_NUMBER <= score <= MAX_NUMBER:
                    score, dropped = _score(score, dropped)
                items.append(
                    Retrieved(id=doc_id, score=score, text=text if type(text) is str else None)
                )
                continue
        elif isinstance(item, str):
            items.append(Retrieved(id=item))
            continue
        retrieved, dropped = _any_item(i, item, dropped)
        items.append(retrieved)
    return tuple(items), dropped


def _ranked_list(value: object, max_ranked_ids: int | None) -> list[object]:
    """``retrieved`` as the list of its first ``max_ranked_ids`` items (none when absent).

    Raises:
        BadResponseError: it is not a list.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadResponseError(
            f"field 'retrieved' is {_type_name(value)}, expected a list", field="retrieved"
        )
    return value if max_ranked_ids is None else value[:max_ranked_ids]


def _any_item(i: int, item: object, dropped: bool) -> tuple[Retrieved, bool]:
    """Ranked item ``i`` that is not a JSON object with a string id: any mapping with an id
    that is a string or an integer, its score and text read leniently.

    Raises:
        BadResponseError: not a mapping, or without such an id.
    """
    if not isinstance(item, Mapping):
        raise BadResponseError(
            f"field 'retrieved[{i}]' is {_type_name(item)}, expected an object or an id",
            field="retrieved",
        )
    doc_id = item.get("id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise BadResponseError(
            f"field 'retrieved[{i}].id' is missing or not a string", field="retrieved"
        )
    score, dropped = _score(item.get("score"), dropped)
    text = item.get("text")
    retrieved = Retrieved(id=str(doc_id), score=score, text=text if isinstance(text, str) else None)
    return retrieved, dropped


def _score(value: object, dropped: bool) -> tuple[float | None, bool]:
    """A hit's score (None when it is not a number), and whether a score was dropped so
    far: a number out of range (:func:`evaluator.targets.figures.score`) is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, dropped
    score = figures.score(value)
    return score, dropped or score is None


def _parse_citations(value: object) -> tuple[Citation, ...]:
    """Citations: a list of 1-based positions (ints) or doc ids (strings)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadResponseError(
            f"field 'citations' is {_type_name(value)}, expected a list", field="citations"
        )
    out: list[Citation] = []
    for i, c in enumerate(value):
        if type(c) is int or type(c) is str:
            out.append(c)
            continue
        if isinstance(c, bool) or not isinstance(c, int | str):
            if isinstance(c, float) and c.is_integer():
                out.append(int(c))
                continue
            raise BadResponseError(
                f"field 'citations[{i}]' is {_type_name(c)}, expected a position or an id",
                field="citations",
            )
        out.append(c)
    return tuple(out)


def _parse_timings(value: object) -> tuple[dict[str, float], bool]:
    """Stage timings: stage name -> seconds, and whether a stage out of range (negative,
    not finite, longer than a day) was dropped; a stage that is not a number is an error."""
    if value is None:
        return {}, False
    if type(value) is not dict and not isinstance(value, Mapping):
        raise BadResponseError(
            f"field 'timings' is {_type_name(value)}, expected an object", field="timings"
        )
    out: dict[str, float] = {}
    dropped = False
    for stage, figure in value.items():
        # exact type first: JSON gives a float or an int, the ABC checks are the fallback
        if type(figure) is not float and (
            isinstance(figure, bool) or not isinstance(figure, int | float)
        ):
            raise BadResponseError(
                f"field 'timings.{stage}' is {_type_name(figure)}, expected a number of seconds",
                field="timings",
            )
        seconds = figures.stage_seconds(figure)
        if seconds is None:
            dropped = True
        else:
            # JSON's names are strings already: str() only for another mapping's keys
            out[stage if type(stage) is str else str(stage)] = seconds
    return out, dropped


def _type_name(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    for t, name in names.items():
        if isinstance(value, t):
            return name
    if isinstance(value, int | float):  # a bool is named above
        return "a number"
    return type(value).__name__
