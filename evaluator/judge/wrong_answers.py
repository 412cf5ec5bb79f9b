"""Wrong answers a lenient judge is known to pass, built deterministically from a golden
case: the two kinds of wrong-answer canary beside the injection one.

- *specific but wrong*: an expected fact's own wording with each of its numbers changed
  ("within 30 days" where the fact is "within 7 days", "30天内" for "7天内"): it has the
  fact's form and none of its value. Only a fact with a number has one.
- *vague but topical*: a reply on the question's subject stating none of its facts ("it
  depends on your order and the applicable policy"), in the question's language. Only a
  case whose question shares no word with its facts has one (the reply repeats the
  question).

Pure functions of the case: the same golden set, the same canaries, run after run; what
they say is never the target's text.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["specific_but_wrong", "vague_but_topical"]

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_CJK = re.compile(r"[\u3400-\u9fff]")
_MAX_QUESTION = 300


def _changed(match: re.Match[str]) -> str:
    """Another number than the one matched, of the same form (an integer stays one): far
    from it, and not holding its digits ("99" never becomes "399", which states it)."""
    text = match.group(0)
    decimals = re.split(r"[.,]", text)
    whole = int(decimals[0])
    other = whole * 4 + 3 if whole < 1000 else whole // 2 + 1
    while decimals[0] in str(other):
        other += 1
    return str(other) if len(decimals) == 1 else f"{other}{text[len(decimals[0])]}{decimals[1]}"


def specific_but_wrong(facts: tuple[tuple[str, ...], ...]) -> str | None:
    """The first expected fact every wording of which holds a number (a fact also worded
    without one, "一个工作日" beside "1个工作日", could be stated by the words alone), in
    its first wording with every number changed (None: no such fact)."""
    for alternatives in facts:
        wordings = [unicodedata.normalize("NFKC", w) for w in alternatives]
        if wordings and all(_NUMBER.search(w) for w in wordings):
            return _NUMBER.sub(_changed, wordings[0])
    return None


def _norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).lower().split())


_WORD = re.compile(r"[^\W\d_]{3,}")


def _pieces(text: str) -> set[str]:
    """A text's words (three letters or more) and its pairs of CJK characters, lower-cased."""
    normal = unicodedata.normalize("NFKC", text).lower()
    cjk = "".join(_CJK.findall(normal))
    pairs = {cjk[i : i + 2] for i in range(len(cjk) - 1)}
    return {w for w in _WORD.findall(normal) if not _CJK.search(w)} | pairs


def vague_but_topical(question: str, facts: tuple[tuple[str, ...], ...]) -> str | None:
    """A reply that takes up the question and states nothing (None: the question shares a
    word with one of the facts, so a reply repeating it could be read as stating it)."""
    asked = _pieces(question)
    if any(asked & _pieces(w) for alternatives in facts for w in alternatives):
        return None
    topic = " ".join(question.split())[:_MAX_QUESTION]
    if _CJK.search(topic):
        return (
            f"关于「{topic}」，这要视您的订单和适用的具体政策而定，"
            "各种情况都有可能，建议以实际情况为准。"
        )
    return (
        f'Regarding "{topic}": it depends on your order and the policy that applies to it; '
        "it can vary from case to case, so please check the details that apply to you."
    )
