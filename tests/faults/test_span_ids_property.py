"""Any trace and span id a report holds through the events' reader (issue 41.5): a report is
outside input, so whatever text stands in ``trace_id`` and ``span_id``, an evaluation event is
tied to a span only by two well-formed, non-zero ids, and never raises."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from evaluator.run.otlp_events import span_ids

pytestmark = pytest.mark.fuzz

_TEXT = st.one_of(
    st.none(), st.text(max_size=40), st.from_regex(r"[0-9a-fA-F]{16,32}", fullmatch=True)
)


@given(_TEXT, _TEXT)
def test_any_ids_tie_an_event_to_a_well_formed_span_or_none(
    trace_id: str | None, span_id: str | None
) -> None:
    """Two lower-case hex ids of 32 and 16 digits, not zero, give their integers; anything
    else gives None."""
    ids = span_ids(trace_id, span_id)
    if ids is None:
        return
    assert trace_id is not None and span_id is not None
    assert (int(trace_id, 16), int(span_id, 16)) == ids
    assert (32, 16) == (len(trace_id), len(span_id))
    assert trace_id == trace_id.lower() and span_id == span_id.lower() and all(ids)


def test_zero_or_upper_case_ids_tie_to_nothing() -> None:
    """An all-zero id is invalid in W3C trace context; upper case is not how ids are written."""
    assert (None, None) == (span_ids("0" * 32, "1" * 16), span_ids("A" * 32, "1" * 16))
