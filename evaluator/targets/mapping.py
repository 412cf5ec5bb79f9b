"""Response mapping: JMESPath expressions that find our fields in a real endpoint's JSON.

Each field has one expression, evaluated against the decoded body:

========== =========================================================== =====================
field      result must be                                              example
========== =========================================================== =====================
ids        a list of ids (strings or integers), best first             ``hits[].id``, ``[].id``
answer     a string; no expression makes the target retrieval-only    ``output.message.text``
citations  a list of 1-based positions (integers) or ids (strings)     ``sources[].n``
timings    an object: stage name -> non-negative seconds               ``debug.timings``
texts      a list of strings (or nulls), one per id                    ``hits[].text``
scores     a list of numbers (or nulls), one per id                    ``hits[].score``
input_     a non-negative integer, or null when the response has no   ``usage.prompt_tokens``
tokens     usage (prompt tokens, for cost)
output_    likewise, the completion tokens                            ``usage.completion_tokens``
tokens
========== =========================================================== =====================

``timings_unit = "milliseconds"`` declares the timings in milliseconds (``took_ms``).
``citation_markers`` reads citations written in the answer text (``[1]``, ``[refund-policy]``;
:mod:`evaluator.targets.markers`), after those of ``citations`` when both are set.

A streamed response is mapped event by event: each field is read from the last event in which
its expression matches (:meth:`ResponseMapper.matching`), since services send their sources
with the first chunk and their usage with the last.

Timings, scores and token counts are optional figures: a number out of range is dropped and
named in the response's ``out_of_range`` (:mod:`evaluator.targets.figures`), never an error.
A field whose expression matches nothing (null) or gives the wrong type is a
:class:`~evaluator.errors.BadResponseError` naming the field and the expression; write
``expr || `[]``` to accept a missing list. A projection at the top of an expression
(``hits[].id``) is applied hit by hit without dropping nulls, so a hit without an id is an
error instead of a silently shorter ranking, and texts and scores stay aligned with ids.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, TypeGuard, TypeVar

from jmespath import visitor
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

from evaluator.errors import BadResponseError
from evaluator.models import Citation, OutOfRange, Retrieved, TargetResponse
from evaluator.targets import figures
from evaluator.targets.markers import CitationMarkers

__all__ = ["FIELDS", "NOWHERE", "ResponseMapper", "Usage", "truthy"]

T = TypeVar("T")

#: no field read from another body than the one given (:meth:`ResponseMapper.__call__`)
NOWHERE: Mapping[str, object] = MappingProxyType({})

#: the fields a response mapping may set, in the order they are shown
FIELDS = (
    "ids",
    "answer",
    "citations",
    "timings",
    "texts",
    "scores",
    "input_tokens",
    "output_tokens",
)


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


#: node types whose value is null when their first child's is (a projection, filter,
#: flatten or index of null is null)
_NULL_CHAINS = frozenset(
    {"index_expression", "projection", "value_projection", "filter_projection", "flatten"}
)
#: node types whose value on a null input is null
_NULL_ON_NULL = frozenset({"field", "multi_select_list", "multi_select_dict"})


def _null_on_null(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` evaluated on null is surely null."""
    kind = node["type"]
    if kind in _NULL_ON_NULL:
        return True
    children = node["children"]
    if kind == "subexpression":
        return _null_on_null(children[0]) and _null_on_null(children[1])
    return kind in _NULL_CHAINS and _null_on_null(children[0])


def _root_key(node: Mapping[str, Any]) -> str | None:
    """The key without which (in an object body) the expression is surely null, if any.

    ``sources[].id`` needs ``sources``; ``a || `[]``` or a function need none. Lets a streamed
    event that lacks the key skip the evaluation: most events hold a piece of text only.
    """
    kind = node["type"]
    if kind == "field":
        return str(node["value"])
    children = node["children"]
    if kind == "subexpression":
        return _root_key(children[0]) if _null_on_null(children[1]) else None
    return _root_key(children[0]) if kind in _NULL_CHAINS else None


def truthy(value: object) -> bool:
    """JMESPath's truth: false, null and empty strings, lists and objects are false."""
    return value is not None and value is not False and value not in ("", [], {})


def _is_number(value: object) -> TypeGuard[int | float]:
    """A JSON number (booleans are not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Dropped:
    """A figure out of range, dropped (:mod:`evaluator.targets.figures`)."""


_DROPPED = _Dropped()


class Usage(NamedTuple):
    """A response's token counts, and which were out of range (then None)."""

    input_tokens: int | None
    output_tokens: int | None
    out_of_range: tuple[OutOfRange, ...] = ()


class ResponseMapper:
    """Maps a decoded JSON body onto a :class:`TargetResponse` with compiled expressions.

    Example::

        mapper = ResponseMapper({"ids": jmespath.compile("[].id")})
        mapper([{"id": "a"}, {"id": "b"}]).ranked_ids  # ("a", "b")
    """

    def __init__(
        self,
        expressions: Mapping[str, ParsedResult],
        *,
        timings_scale: float = 1.0,
        markers: CitationMarkers | None = None,
        retrieved_when: ParsedResult | None = None,
    ) -> None:
        unknown = set(expressions) - set(FIELDS)
        if unknown or "ids" not in expressions:
            raise ValueError(f"expressions must include 'ids' and only {FIELDS}: {unknown}")
        self.expressions = dict(expressions)
        #: seconds per unit of the timings values (0.001 for milliseconds)
        self.timings_scale = timings_scale
        #: check and keep only the first this many hits: the target's, set by the target
        #: that reads with this mapping (:meth:`limited`)
        self.max_ranked_ids: int | None = None
        #: citations written in the answer text
        self.markers = markers
        #: true for a response that reports its retrieval (None: every response does); one
        #: where it is not has its retrieval metrics n/a, not 0 for ranking nothing
        self.retrieved_when = retrieved_when
        self._interpreter = visitor.TreeInterpreter()
        #: field -> the key an object body needs for the field to match (None: any body)
        self._root_keys = {
            name: _root_key(compiled.parsed) for name, compiled in self.expressions.items()
        }

    @property
    def retrieval_only(self) -> bool:
        """No answer expression: answers (and citations) are not scored."""
        return "answer" not in self.expressions

    @property
    def ranks(self) -> bool:
        """Whether the ids come from the response: a literal (the preset's ``[]`` until
        ``response.ids`` is set) ranks nothing, and its retrieval metrics are n/a."""
        parsed = getattr(self.expressions["ids"], "parsed", None)
        return not (isinstance(parsed, dict) and parsed.get("type") == "literal")

    @property
    def cites(self) -> bool:
        """Whether citations are mapped at all (a field or markers in the answer)."""
        return "citations" in self.expressions or self.markers is not None

    def cited_in(self, answer: str | None) -> tuple[Citation, ...]:
        """The citations marked in ``answer`` (none without ``citation_markers``)."""
        if self.markers is None or not answer:
            return ()
        return self.markers(answer)

    def identity(self) -> dict[str, str]:
        """Field -> expression source, for the config hash."""
        out = {name: self.expressions[name].expression for name in FIELDS if name in self}
        if self.timings_scale != 1.0:
            out["timings_unit"] = "milliseconds"
        if self.markers is not None:
            out["citation_markers"] = self.markers.pattern.pattern
        if self.retrieved_when is not None:
            out["retrieved_when"] = self.retrieved_when.expression
        return out

    def without(self, field: str) -> ResponseMapper:
        """The same mapping without ``field`` (a streamed answer is assembled, not mapped)."""
        rest = {name: e for name, e in self.expressions.items() if name != field}
        mapper = ResponseMapper(
            rest,
            timings_scale=self.timings_scale,
            markers=self.markers,
            retrieved_when=self.retrieved_when,
        )
        return mapper.limited(self.max_ranked_ids)

    def limited(self, max_ranked_ids: int | None) -> ResponseMapper:
        """The same mapping reading only the first ``max_ranked_ids`` hits (None: all)."""
        mapper = copy.copy(self)
        mapper.max_ranked_ids = max_ranked_ids
        return mapper

    def matching(self, body: object) -> list[str]:
        """The fields whose expression finds something in ``body``: a value JMESPath holds
        true (not null, false or empty).

        A streamed field is read from the last event where it matches, so ``sources[].id ||
        `[]``` keeps the sources of the one event that has them. An expression that fails
        on this body (a function given the wrong types) does not match it.
        """
        found = []
        for name, key in self._root_keys.items():
            if key is not None and not (isinstance(body, dict) and key in body):
                continue
            try:
                if truthy(self.search(name, body)):
                    found.append(name)
            except BadResponseError:
                continue
        return found

    def tokens(self, body: object, found: Mapping[str, object] = NOWHERE) -> Usage:
        """Input and output tokens, None where not mapped, null or out of range (``found``:
        as in :meth:`__call__`)."""
        drops: list[OutOfRange] = []
        return Usage(
            self._count("input_tokens", found.get("input_tokens", body), drops),
            self._count("output_tokens", found.get("output_tokens", body), drops),
            tuple(drops),
        )

    def _count(self, field: OutOfRange, body: object, drops: list[OutOfRange]) -> int | None:
        if field not in self:
            return None
        value = self.search(field, body)
        if value is None:
            return None
        if not _is_number(value):
            raise self._fail(field, f"gave {_kind_of(value)}, expected a count of tokens")
        tokens = figures.count(value)
        if tokens is None:
            drops.append(field)
        return tokens

    def __contains__(self, field: str) -> bool:
        return field in self.expressions

    def search(self, field: str, body: object) -> Any:
        """Evaluate one field's expression; a top-level projection keeps its nulls."""
        compiled = self.expressions[field]
        node = compiled.parsed
        try:
            if node["type"] == "projection":
                left, right = node["children"]
                base = self._interpreter.visit(left, body)
                if not isinstance(base, list):
                    return None
                return [self._interpreter.visit(right, item) for item in base]
            # not compiled.search: it makes an interpreter per call, a reference cycle each
            return self._interpreter.visit(node, body)
        except JMESPathError as exc:  # a function given the wrong types: sort_by on mixed scores
            raise self._fail(field, f"failed: {exc}") from None

    def _fail(self, field: str, problem: str) -> BadResponseError:
        expression = self.expressions[field].expression
        return BadResponseError(
            f"response.{field} expression {json.dumps(expression)} {problem}",
            field=field,
            expression=expression,
        )

    def _typed(self, field: str, body: object, kind: type[T], expected: str) -> T:
        """The field's value, when of ``kind``; null or another type is an error."""
        value = self.search(field, body)
        if value is None:
            raise self._fail(field, "matched nothing (null)")
        if not isinstance(value, kind):
            raise self._fail(field, f"gave {_kind_of(value)}, expected {expected}")
        return value

    def __call__(self, body: object, found: Mapping[str, object] = NOWHERE) -> TargetResponse:
        """Map ``body``; a field named in ``found`` is read from the body given there
        instead (a stream's event where that field matched). Timings and scores out of
        range are dropped and named in ``out_of_range`` (:mod:`evaluator.targets.figures`).

        Raises:
            BadResponseError: a field matched nothing or has the wrong type.
        """
        drops: list[OutOfRange] = []
        hits = self._typed("ids", found.get("ids", body), list, "a list of ids")
        ids = self._ids(hits[: self.max_ranked_ids])
        texts = self._aligned("texts", found.get("texts", body), len(hits), self._text)
        scores = self._aligned("scores", found.get("scores", body), len(hits), self._score)
        if _DROPPED in scores:
            drops.append("scores")
        retrieved = tuple(
            Retrieved(id=doc_id, score=None if isinstance(score, _Dropped) else score, text=text)
            for doc_id, text, score in zip(ids, texts, scores, strict=True)
        )
        answer = (
            self._typed("answer", found.get("answer", body), str, "a string")
            if "answer" in self
            else None
        )
        citations = self._citations(found.get("citations", body))
        if self.markers is not None:
            citations += self.cited_in(answer)
        timings = self._timings(found.get("timings", body), drops)
        return TargetResponse(
            retrieved=retrieved,
            answer=answer,
            citations=citations,
            timings=timings,
            out_of_range=figures.in_order(drops),
            retrieval_reported=self._reports_retrieval(body),
        )

    def _reports_retrieval(self, body: object) -> bool:
        """Whether ``body`` reports its retrieval: ``retrieved_when`` holds (always without
        one). An expression that fails on the body is the mapping's error."""
        if self.retrieved_when is None:
            return True
        try:
            return truthy(self._interpreter.visit(self.retrieved_when.parsed, body))
        except JMESPathError as exc:
            raise BadResponseError(
                f"response.retrieved_when expression {json.dumps(self.retrieved_when.expression)} "
                f"failed: {exc}",
                field="retrieved_when",
                expression=self.retrieved_when.expression,
            ) from None

    def _ids(self, value: list[Any]) -> list[str]:
        ids: list[str] = []
        for i, item in enumerate(value):
            if isinstance(item, str) or (isinstance(item, int) and not isinstance(item, bool)):
                ids.append(str(item))
            elif item is None:
                raise self._fail("ids", f"matched nothing for hit {i}")
            else:
                raise self._fail(
                    "ids", f"gave {_kind_of(item)} for hit {i}, expected a string or integer id"
                )
        return ids

    def _aligned(
        self, field: str, body: object, count: int, check: Callable[[str, int, object], T]
    ) -> list[T | None]:
        if field not in self:
            return [None] * len(range(count)[: self.max_ranked_ids])
        value = self._typed(field, body, list, f"a list of {field}")
        if len(value) != count:
            raise self._fail(
                field,
                f"gave {len(value)} value(s) for {count} id(s); a projection such as "
                f"hits[].{field[:-1]} keeps them aligned",
            )
        return [check(field, i, item) for i, item in enumerate(value[: self.max_ranked_ids])]

    def _text(self, field: str, i: int, item: object) -> str | None:
        if item is None or isinstance(item, str):
            return item
        raise self._fail(field, f"gave {_kind_of(item)} for hit {i}, expected a string")

    def _score(self, field: str, i: int, item: object) -> float | _Dropped | None:
        if item is None:
            return None
        if not _is_number(item):
            raise self._fail(field, f"gave {_kind_of(item)} for hit {i}, expected a number")
        number = figures.score(item)
        return _DROPPED if number is None else number

    def _citations(self, body: object) -> tuple[Citation, ...]:
        if "citations" not in self:
            return ()
        out: list[Citation] = []
        for i, item in enumerate(self._typed("citations", body, list, "a list")):
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, int | float) and not isinstance(item, bool) and item == item:
                if isinstance(item, float) and not item.is_integer():
                    raise self._fail("citations", f"gave {item!r} for citation {i}")
                out.append(int(item))
            else:
                raise self._fail(
                    "citations",
                    f"gave {_kind_of(item)} for citation {i}, expected a position or an id",
                )
        return tuple(out)

    def _timings(self, body: object, drops: list[OutOfRange]) -> dict[str, float]:
        if "timings" not in self:
            return {}
        out: dict[str, float] = {}
        for stage, value in self._typed("timings", body, dict, "an object").items():
            if not _is_number(value):
                raise self._fail(
                    "timings", f"gave {_kind_of(value)} for stage {stage!r}, expected seconds"
                )
            seconds = figures.stage_seconds(value, self.timings_scale)
            if seconds is None:
                drops.append("timings")
            else:
                out[str(stage)] = seconds
        return out
