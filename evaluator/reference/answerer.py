"""Extractive answerer: quote the evidence sentence that best covers the question, or refuse.

The "model" stage of the reference service. It reads the first few ranked chunks, scores
every sentence by the IDF-weighted share of the question's terms it contains, plus a bonus
when it states a fact of the asked type (a small penalty per rank keeps it close to the top
evidence), quotes the best one and cites the
1-based position of its chunk. An FAQ question sentence ("问：…？", "Q: …?") is quoted with
the sentence that answers it. When even the best sentence covers too little of the question,
it refuses with a refusal phrase in the question's language instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from evaluator.reference.answer_type import expected_types, states_type
from evaluator.reference.rerank import coverage
from evaluator.reference.retriever import Candidate, KeywordIndex

__all__ = ["REFUSALS", "Answer", "ExtractiveAnswerer", "language_of"]

#: the refusal phrase per answer language; both contain a default evaluator refusal phrase
REFUSALS: dict[str, str] = {
    "zh": "没有足够证据回答这个问题。",
    "en": "There is not enough evidence to answer this question.",
}

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def language_of(text: str) -> str:
    """ "zh" when the text contains a CJK ideograph, else "en"."""
    return "zh" if _CJK.search(text) else "en"


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer text, the 1-based evidence positions it cites, and whether it refused."""

    text: str
    citations: tuple[int, ...]
    refused: bool


@dataclass(frozen=True, slots=True)
class _Pick:
    position: int  # 1-based rank of the chunk in the evidence
    sentence: int  # index of the sentence within the chunk
    coverage: float
    score: float


class ExtractiveAnswerer:
    """Pick, quote and cite the best evidence sentence of ``index`` (its sentences and term
    weights)."""

    #: minimum coverage of the question by the best sentence (below it, refuse), tuned on
    #: evals/rag_cases.jsonl
    threshold = 0.45
    #: how many top-ranked chunks are read
    depth = 3
    #: subtracted from a sentence's score per rank below the first
    rank_penalty = 0.04
    #: added to a sentence's score when it states a fact of the asked type
    type_bonus = 0.15

    def __init__(self, index: KeywordIndex) -> None:
        self.index = index

    def answer(
        self,
        question: str,
        query_tokens: Collection[str] | Mapping[str, float],
        evidence: Sequence[Candidate],
        *,
        misread: bool = False,
        types: frozenset[str] | None = None,
    ) -> Answer:
        """Answer ``question`` from ``evidence`` (ranked, best first).

        ``query_tokens`` are the question's terms, or each term's weight (a follow-up read
        with its context, whose ``types`` of fact asked for may come from an earlier turn).
        ``misread`` is the ``answer_degraded`` failure: the right chunk is chosen and cited,
        but the quoted sentence is the one after the best (or half of a lone sentence).
        """
        lang = language_of(question)
        query = query_tokens if isinstance(query_tokens, Mapping) else frozenset(query_tokens)
        asked = expected_types(question) if types is None else types
        pick = self._best(query, asked, evidence)
        if pick is None or pick.coverage < self.threshold:
            return Answer(REFUSALS[lang], (), refused=True)
        sentences = self.index.sentences[evidence[pick.position - 1].index]
        quoted = list(self._quoted(sentences, pick.sentence))
        if misread:
            quoted = self._misread(sentences, pick.sentence)
        joiner = "" if lang == "zh" else " "
        text = f"{joiner.join(quoted)} [{pick.position}]"
        return Answer(text, (pick.position,), refused=False)

    def _best(
        self,
        query: Collection[str] | Mapping[str, float],
        types: frozenset[str],
        evidence: Sequence[Candidate],
    ) -> _Pick | None:
        best: _Pick | None = None
        for position, candidate in enumerate(evidence[: self.depth], start=1):
            sentences = self.index.sentences[candidate.index]
            for number, terms in enumerate(self.index.sentence_token_sets[candidate.index]):
                cover = coverage(query, terms, self.index)
                cover += self.type_bonus * states_type(types, sentences[number])
                score = cover - self.rank_penalty * (position - 1)
                if best is None or score > best.score:
                    best = _Pick(position, number, cover, score)
        return best

    @staticmethod
    def _quoted(sentences: Sequence[str], number: int) -> Sequence[str]:
        sentence = sentences[number]
        if sentence.rstrip().endswith(("？", "?")) and number + 1 < len(sentences):
            return sentences[number : number + 2]
        return (sentence,)

    @staticmethod
    def _misread(sentences: Sequence[str], number: int) -> list[str]:
        if len(sentences) > 1:
            return [sentences[(number + 1) % len(sentences)]]
        lone = sentences[number]
        return [lone[: len(lone) // 2]]
