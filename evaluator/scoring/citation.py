"""Citation metrics: do the answer's citations point at relevant retrieved evidence?

A citation is an ``int``, a 1-based position in ``retrieved`` as the endpoint returned it
(duplicates included), or a ``str``, a document id (``"1"`` is an id, never a position).
A citation *resolves* when the position exists or the id was retrieved; anything else
(position 0, negative or past the end, an unknown id, a bool or any other type) does not.
A citation is *supported* when it resolves to a relevant id (grade >= 1).

Citations that resolve to the same document count once, as do identical unresolved ones,
so repeating a citation can neither raise nor lower a score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluator.models import Citation

__all__ = [
    "citation_precision",
    "citation_recall",
    "citations_valid",
    "precision_of_resolved",
    "recall_of_resolved",
    "resolve_all",
    "resolve_citation",
]


def resolve_citation(citation: Citation, retrieved_ids: Sequence[str]) -> str | None:
    """The retrieved document id a citation points at, or None when it points at nothing.

    Args:
        citation: a 1-based position (int) into ``retrieved_ids`` or a document id (str).
        retrieved_ids: the retrieved ids in the order returned, duplicates kept.

    Returns:
        The id, or None for a position out of range (including 0 and negatives), an id
        not retrieved, or a value of another type (``True`` is not position 1).
    """
    if isinstance(citation, bool):
        return None
    if isinstance(citation, int):
        return retrieved_ids[citation - 1] if 1 <= citation <= len(retrieved_ids) else None
    if isinstance(citation, str):
        return citation if citation in retrieved_ids else None
    return None


def resolve_all(citations: Sequence[Citation], retrieved_ids: Sequence[str]) -> list[str | None]:
    """:func:`resolve_citation` of each citation, in order."""
    n = len(retrieved_ids)
    # a position (the usual citation) resolved inline; anything else by resolve_citation
    return [
        (retrieved_ids[c - 1] if 1 <= c <= n else None)
        if type(c) is int
        else resolve_citation(c, retrieved_ids)
        for c in citations
    ]


def _distinct_targets(
    citations: Sequence[Citation], resolved: Sequence[str | None]
) -> dict[tuple[str, str], str | None]:
    """Map each distinct citation target to its resolved id (None when unresolved)."""
    targets: dict[tuple[str, str], str | None] = {}
    for citation, doc_id in zip(citations, resolved, strict=True):
        # repr keeps unresolved keys hashable whatever the endpoint sent
        key = ("doc", doc_id) if doc_id is not None else (type(citation).__name__, repr(citation))
        targets[key] = doc_id
    return targets


def citation_precision(
    citations: Sequence[Citation],
    retrieved_ids: Sequence[str],
    relevance: Mapping[str, int],
    *,
    unanswerable: bool = False,
) -> float:
    """Share of the distinct citations that point at relevant retrieved evidence.

    ``precision = |supported distinct citations| / |distinct citations|``. With no
    citation at all: 1.0 for an unanswerable case (nothing to cite), else 0.0.

    Args:
        citations: the answer's citations, positions or ids.
        retrieved_ids: the retrieved ids in the order returned, duplicates kept.
        relevance: id -> grade; ids with grade >= 1 are relevant.
        unanswerable: whether the case has no evidence in the knowledge base.

    Returns:
        A value in [0, 1].
    """
    return precision_of_resolved(
        citations, resolve_all(citations, retrieved_ids), relevance, unanswerable=unanswerable
    )


def precision_of_resolved(
    citations: Sequence[Citation],
    resolved: Sequence[str | None],
    relevance: Mapping[str, int],
    *,
    unanswerable: bool = False,
) -> float:
    """:func:`citation_precision` with each citation already resolved (:func:`resolve_all`)."""
    if None not in resolved:
        return _precision_of_ids(resolved, relevance, unanswerable)  # type: ignore[arg-type]
    targets = _distinct_targets(citations, resolved)
    if not targets:
        return 1.0 if unanswerable else 0.0
    supported = 0
    for doc_id in targets.values():
        if doc_id is not None and relevance.get(doc_id, 0) >= 1:
            supported += 1
    return supported / len(targets)


def _precision_of_ids(
    resolved: Sequence[str], relevance: Mapping[str, int], unanswerable: bool
) -> float:
    """:func:`precision_of_resolved` when every citation resolved (the usual answer): the
    distinct targets are the distinct ids, and the share is the same whatever order they are
    counted in (``tests/scoring/test_formulas.py`` holds it to the formula)."""
    if not resolved:
        return 1.0 if unanswerable else 0.0
    cited = set(resolved)
    supported = 0
    for doc_id in cited:
        if relevance.get(doc_id, 0) >= 1:
            supported += 1
    return supported / len(cited)


def citation_recall(
    citations: Sequence[Citation], retrieved_ids: Sequence[str], relevance: Mapping[str, int]
) -> float:
    """Share of the relevant ids that the answer cites (meaningful for answerable cases).

    ``recall = |{relevant ids cited}| / |{relevant ids}|``; a relevant id counts as cited
    only through a citation that resolves to it.

    Args:
        citations: the answer's citations, positions or ids.
        retrieved_ids: the retrieved ids in the order returned, duplicates kept.
        relevance: id -> grade; ids with grade >= 1 are relevant.

    Returns:
        A value in [0, 1]; 0.0 when there is no relevant id.
    """
    return recall_of_resolved(
        resolve_all(citations, retrieved_ids),
        {doc_id for doc_id, grade in relevance.items() if grade >= 1},
    )


def recall_of_resolved(resolved: Sequence[str | None], relevant: set[str]) -> float:
    """:func:`citation_recall` with the citations resolved and ``relevant`` the ids graded
    >= 1."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(resolved)) / len(relevant)


def citations_valid(citations: Sequence[Citation], retrieved_ids: Sequence[str]) -> bool:
    """Whether every citation resolves to a retrieved document.

    Args:
        citations: the answer's citations, positions or ids.
        retrieved_ids: the retrieved ids in the order returned, duplicates kept.

    Returns:
        True when each citation resolves (vacuously True with no citation).
    """
    return None not in resolve_all(citations, retrieved_ids)
