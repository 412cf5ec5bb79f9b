"""Answer types: what kind of fact a question asks for, and whether a passage states one.

"多久到账" and "how long" ask for a duration, "多少钱" and "how much" for an amount of money,
"费率" for a percentage, "几次" and "how many" for a count, "几点" for a time of day. A passage
stating a fact of the asked type is more likely to hold the answer than one that merely
repeats the question's words: the rerank and answer stages both use this signal.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["expected_types", "states_type"]

_QUESTION: dict[str, re.Pattern[str]] = {
    "duration": re.compile(
        r"多久|多长时间|多少天|几天|几年|几个月|期限|有效期|什么时候|"
        r"how long|how soon|how many days|how often|\bwhen\b|\bperiod\b|\bvalid\b"
    ),
    "money": re.compile(
        r"多少钱|费用|收费|运费|年费|服务费|要钱|价格|怎么算|怎么计算|"
        r"how much|\bcost|\bfees?\b|\bprice|\bcharge|minimum order|amounts?\b"
    ),
    "percent": re.compile(r"费率|比例|百分|\brate\b|\bshare\b|percent|what fee"),
    "count": re.compile(r"几次|多少次|how many (?!days)"),
    "clock": re.compile(r"几点|what time|by what time|\bhours\b"),
}

_EVIDENCE: dict[str, re.Pattern[str]] = {
    "duration": re.compile(
        r"\d+(?:-\d+)?\s*(?:个)?(?:工作日|天|小时|分钟|个月|月|年|周)|七天|一年|"
        r"\d+(?:-\d+)?(?:\s|-)(?:business days?|days?|hours?|minutes?|months?|years?|weeks?)"
    ),
    "money": re.compile(r"\d+(?:\.\d+)?元|us\$\s*\d"),
    "percent": re.compile(r"\d+(?:\.\d+)?%"),
    "count": re.compile(r"\d+\s*次|\d+\s*(?:times|wrong|failed|orders|items|gift cards)"),
    "clock": re.compile(r"\d{1,2}:\d{2}"),
}


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def expected_types(question: str) -> frozenset[str]:
    """The answer types the question asks for (empty when it asks for none we know)."""
    folded = _fold(question)
    return frozenset(t for t, pattern in _QUESTION.items() if pattern.search(folded))


def states_type(types: frozenset[str], text: str) -> bool:
    """Whether ``text`` states a fact of one of ``types``."""
    if not types:
        return False
    folded = _fold(text)
    return any(_EVIDENCE[t].search(folded) for t in types)
