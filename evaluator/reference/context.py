"""Follow-up questions: a question read with the earlier questions of its conversation.

"那退到支付宝呢？" ("and to Alipay?") means nothing on its own: the refund it asks about is in
the turn before. Chat assistants rewrite such a follow-up into a standalone question before
they retrieve (a "condense question" step, usually a model call). The reference service
does it deterministically: the terms of the earlier user questions join the query at
:data:`CONTEXT_WEIGHT`, below the follow-up's own terms, so the follow-up says *what* it
asks (Alipay, not the bank card of turn 1) and the context says *about what* (refunds). The
kind of fact asked for ("how long") is the follow-up's, or else the latest earlier
question's that asks for one.

A question without earlier ones is read exactly as before: its terms, each of weight 1.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from evaluator.reference.answer_type import expected_types

__all__ = ["CONTEXT_WEIGHT", "Query", "read_question"]

#: weight of a term that only an earlier question holds (the follow-up's own terms: 1)
CONTEXT_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class Query:
    """A question as the pipeline searches with it."""

    #: the terms BM25 searches with: the question's, then the context's it lacks
    tokens: tuple[str, ...]
    #: the terms coverage is weighed over: a set (each of weight 1) for a question read
    #: alone, else each term's weight
    terms: Collection[str] | Mapping[str, float]
    #: the kinds of fact asked for (:func:`~evaluator.reference.answer_type.expected_types`)
    types: frozenset[str]


def read_question(
    question: str, earlier: Sequence[str], tokenizer: Callable[[str], list[str]]
) -> Query:
    """``question`` with the earlier user questions of its conversation (oldest first) as
    context; without them, the question alone."""
    own = tokenizer(question)
    types = expected_types(question)
    if not earlier:
        return Query(tuple(own), frozenset(own), types)
    weights = dict.fromkeys(own, 1.0)
    context: list[str] = []
    for before in reversed(earlier):  # the latest earlier question first
        for term in tokenizer(before):
            if term not in weights:
                weights[term] = CONTEXT_WEIGHT
                context.append(term)
        types = types or expected_types(before)
    return Query((*own, *context), weights, types)
