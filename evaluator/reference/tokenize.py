"""Bilingual tokeniser: CJK runs become character bigrams and unigrams, Latin runs words.

BM25 needs terms. Chinese has no spaces, so each run of CJK characters is split at common
question and function words (stop phrases), then emitted as its single characters plus its
overlapping character bigrams: "退款到账" gives 退, 款, 到, 账, 退款, 款到, 到账. Latin text
is lower-cased, split into words and numbers, stripped of English stopwords and lightly
stemmed ("refunds", "refunded" -> "refund"). The same function tokenises documents and
questions, so both sides agree.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["DEGRADED", "STANDARD", "Tokenizer", "tokenize"]

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"[{_CJK}]+|[a-z0-9]+")

#: question and function words split CJK runs; they carry no evidence of their own
_ZH_STOP_TEXT = """
什么 怎么 怎样 如何 多少 多久 多长 几天 是否 可以 能否 能不能 可不可以 有没有 是不是 请问
需要 我们 你们 我的 您的 一下 时候 哪些 哪里 为什么 还是 或者 以及
吗 呢 吧 啊 的 了 我 您 你 是 在 有 和 与 或 要 会 能 被 把 得 地 就 都 也 还 几 哪 该 么
对 给 让 从 及
"""
# longest first, so that "能不能" is removed whole rather than as "能" + "不" + "能"
_ZH_STOP = re.compile(
    "|".join(map(re.escape, sorted(set(_ZH_STOP_TEXT.split()), key=len, reverse=True)))
)

_EN_STOP_TEXT = """
a an the and or but if then so of to in on at by for from with without into onto about
over under is are was were be been being am do does did done doing have has had having i
me my mine we us our you your yours he she it its they them their this that these those
there here what which who whom whose when where why how long much many can could will
would shall should may might must not no yes any some all each every than too very just
also only get got still please tell know want need as up out off again once after before
other such own same
"""
_EN_STOPWORDS = frozenset(_EN_STOP_TEXT.split())


def _stem(word: str) -> str:
    """Light suffix stripping: plural -s/-ies, -ing, -ed; enough for a help centre."""
    if word.isdigit() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return _undoubled(word[: -len(suffix)])
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _undoubled(stem: str) -> str:
    """A stem without the consonant doubled before -ing/-ed: shipped -> shipp -> ship."""
    if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
        return stem[:-1]
    return stem


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """A tokeniser configuration; :data:`STANDARD` is the good one.

    ``cjk_bigrams`` adds overlapping character bigrams to CJK unigrams; ``stopwords``
    removes Chinese stop phrases and English stopwords; ``stemming`` strips English suffixes.
    """

    cjk_bigrams: bool = True
    stopwords: bool = True
    stemming: bool = True

    def __call__(self, text: str) -> list[str]:
        """Tokens of ``text`` in order, duplicates kept (BM25 counts term frequency)."""
        tokens: list[str] = []
        normalised = unicodedata.normalize("NFKC", text).casefold()
        for match in _RUNS.finditer(normalised):
            run = match.group()
            if "a" <= run[0] <= "z" or run[0].isdigit():
                tokens.extend(self._latin(run))
            else:
                pieces = _ZH_STOP.split(run) if self.stopwords else [run]
                for piece in pieces:
                    tokens.extend(piece)
                    if self.cjk_bigrams:
                        tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        return tokens

    def _latin(self, word: str) -> list[str]:
        if self.stopwords and word in _EN_STOPWORDS:
            return []
        return [_stem(word) if self.stemming else word]


#: unigrams + bigrams, stop phrases removed, light English stemming
STANDARD = Tokenizer()
#: what a broken text pipeline does: CJK single characters only, no stopwords, no stemming
DEGRADED = Tokenizer(cjk_bigrams=False, stopwords=False, stemming=False)


def tokenize(text: str) -> list[str]:
    """Tokenise with :data:`STANDARD`."""
    return STANDARD(text)
