"""Unicode's Stream-Safe Text Format (UAX #15, section 13) written out independently of
:func:`evaluator.scoring.answer.stream_safe`, one character at a time, for the tests'
reference of ``normalise``."""

from __future__ import annotations

import unicodedata

__all__ = ["stream_safe_reference"]

#: UAX #15: at most 30 non-starters in a row; U+034F COMBINING GRAPHEME JOINER after them
_LIMIT = 30
_CGJ = "\u034f"


def stream_safe_reference(text: str) -> str:
    """``text`` with a joiner inserted before the 31st non-starter in a row (a non-starter:
    its decomposition begins with a character of a non-zero combining class)."""
    out = []
    run = 0
    for ch in text:
        first = unicodedata.normalize("NFKD", ch)[0]
        if unicodedata.combining(first) == 0:
            run = 0
        else:
            if run + 1 > _LIMIT:
                out.append(_CGJ)
                run = 0
            run += 1
        out.append(ch)
    return "".join(out)
