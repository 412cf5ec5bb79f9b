"""The daemon's pure decisions: how a run is classified, what a listen address means."""

from __future__ import annotations

import pytest

from evaluator.daemon.publish import run_outcome
from evaluator.daemon.server import parse_listen
from evaluator.errors import ConfigError
from evaluator.summary import Summary


def _summary(case_count: int, scored: int, errors: int) -> Summary:
    return Summary(
        case_count=case_count,
        scored_count=scored,
        error_count=errors,
        totals={},
        error_rate=errors / case_count if case_count else None,
        p50_seconds=None,
        p95_seconds=None,
        stage_p95_seconds={},
        errors_by_kind={},
    )


class TestClassify:
    """complete / incomplete / failed, at and around the error-ratio limit."""

    @pytest.mark.parametrize(
        ("cases", "scored", "errors", "limit", "expected"),
        [
            (10, 10, 0, 0.1, "complete"),
            (10, 9, 1, 0.1, "complete"),  # exactly at the limit: still complete
            (10, 8, 2, 0.1, "incomplete"),
            (3, 2, 1, 1 / 3, "complete"),  # 1/3 computed two ways must not tip over
            (10, 0, 10, 1.0, "failed"),  # nothing scored: failed, whatever the limit
            (0, 0, 0, 0.1, "failed"),  # an empty run says nothing about quality
            (10, 10, 0, 0.0, "complete"),
            (10, 9, 1, 0.0, "incomplete"),
        ],
    )
    def test_outcome(
        self, cases: int, scored: int, errors: int, limit: float, expected: str
    ) -> None:
        """A run is complete while its error share stays within the limit, failed when nothing
        was scored, else incomplete."""
        assert expected == run_outcome(_summary(cases, scored, errors), limit)


class TestParseListen:
    """HOST:PORT, IPv6 in brackets, an empty host meaning every interface."""

    @pytest.mark.parametrize(
        ("listen", "expected"),
        [
            ("127.0.0.1:9464", ("127.0.0.1", 9464)),
            ("[::1]:9464", ("::1", 9464)),
            ("[::]:0", ("::", 0)),
            (":9464", ("0.0.0.0", 9464)),
            ("localhost:65535", ("localhost", 65535)),
        ],
    )
    def test_valid(self, listen: str, expected: tuple[str, int]) -> None:
        """A listen address is read as host and port."""
        assert expected == parse_listen(listen)

    @pytest.mark.parametrize("listen", ["9464", "host:", "host:http", "host:65536", "host:-1"])
    def test_invalid_names_the_value(self, listen: str) -> None:
        """A malformed listen address is a configuration error naming the value."""
        with pytest.raises(ConfigError, match="expected HOST:PORT") as info:
            parse_listen(listen)
        assert repr(listen) in str(info.value)
