"""Hypothesis strategies several property tests share."""

from __future__ import annotations

from typing import get_args, get_type_hints

import msgspec
from hypothesis import strategies as st

from evaluator.models import CaseScores

__all__ = ["RATIO", "case_scores"]

#: a ratio in 0..1, as every CaseScores value that is not a flag is
RATIO = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_RATIO_OR_NONE = st.none() | RATIO


def case_scores(
    optional_ratio: st.SearchStrategy[float | int | None] = _RATIO_OR_NONE,
) -> st.SearchStrategy[CaseScores]:
    """Any :class:`CaseScores`, each field drawn by its type: flags as booleans, the rest
    ratios; a field with a default may also be None (``optional_ratio`` for the ratios).

    Read from the record's fields, so a score added there is drawn here with no edit.
    """
    hints = get_type_hints(CaseScores)
    fields: dict[str, st.SearchStrategy[object]] = {}
    for field in msgspec.structs.fields(CaseScores):
        hint = hints[field.name]
        flag = hint is bool or bool in get_args(hint)
        if field.required:
            # retrieval: None only for a target whose ids are not mapped (drawn as a number
            # here, as the properties over these scores expect a ranked case)
            fields[field.name] = st.booleans() if flag else RATIO
        else:
            fields[field.name] = st.none() | st.booleans() if flag else optional_ratio
    return st.builds(CaseScores, **fields)
