"""Keyword retrieval: a BM25 index (``bm25s``) over the chunks, plus term statistics."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import bm25s
import numpy as np

from evaluator.reference.corpus import Chunk

__all__ = ["Candidate", "KeywordIndex"]

Tokenize = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A chunk proposed by a stage, with that stage's score (higher is better)."""

    index: int
    score: float


class KeywordIndex:
    """BM25 over title + text of every chunk, built once.

    Also keeps the token sets of every chunk, title and sentence, and the inverse document
    frequency of every term, which the rerank and answer stages use to weigh how much of a
    question a passage covers.

    Args:
        chunks: the corpus, in a fixed order (candidates refer to it by position).
        tokenizer: turns text into terms; questions must use the same one.
    """

    def __init__(self, chunks: Sequence[Chunk], tokenizer: Tokenize) -> None:
        self.chunks = tuple(chunks)
        self.tokenizer = tokenizer
        corpus_tokens = [tokenizer(f"{c.title}\n{c.text}") for c in self.chunks]
        self._bm25 = bm25s.BM25(k1=1.2, b=0.75)
        self._bm25.index(corpus_tokens, show_progress=False)
        self._vocab: frozenset[str] = frozenset(self._bm25.vocab_dict)
        self.token_sets = tuple(frozenset(tokens) for tokens in corpus_tokens)
        self.title_token_sets = tuple(frozenset(tokenizer(c.title)) for c in self.chunks)
        self.sentences = tuple(c.sentences for c in self.chunks)
        self.sentence_token_sets = tuple(
            tuple(frozenset(tokenizer(s)) for s in sentences) for sentences in self.sentences
        )
        document_frequency = Counter(t for tokens in self.token_sets for t in tokens)
        n = len(self.chunks)
        self._idf = {
            t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in document_frequency.items()
        }
        #: a term no chunk contains is the strongest evidence of all: weigh it as the rarest
        self.unseen_idf = math.log(1 + (n + 0.5) / 0.5)

    def idf(self, term: str) -> float:
        """Inverse document frequency of ``term`` (the maximum for an unseen term)."""
        return self._idf.get(term, self.unseen_idf)

    def search(self, query_tokens: Sequence[str], n: int) -> list[Candidate]:
        """The ``n`` best chunks by BM25, best first; chunks scoring 0 are left out."""
        known = [t for t in query_tokens if t in self._vocab]
        if not known or n <= 0:
            return []
        scores = np.asarray(self._bm25.get_scores(known), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:n]
        return [Candidate(int(i), float(scores[i])) for i in order if scores[i] > 0.0]
