"""The exception tree: drawn once, kinds derived from it, context held in attributes."""

from __future__ import annotations

import inspect

import pytest

from evaluator import errors
from evaluator.errors import (
    CASE_ERRORS,
    ERROR_KINDS,
    BadResponseError,
    EvaluatorError,
    ExitCode,
    TargetConnectError,
    TargetError,
    TargetHTTPStatusError,
    TargetTimeout,
)


class TestTree:
    """Every error class is in the drawn tree and under the one root."""

    def test_every_class_is_drawn_in_the_module_docstring(self) -> None:
        """The tree in the docstring names every exception class the module defines."""
        classes = [
            name
            for name, value in vars(errors).items()
            if inspect.isclass(value) and issubclass(value, EvaluatorError)
        ]
        doc = errors.__doc__ or ""
        assert [] == [name for name in classes if name not in doc]
        assert {"UsageError", "OutputError", "PushError"} <= set(classes)

    def test_push_error_is_the_gates(self) -> None:
        """The gate's push module raises the tree's PushError, not a class of its own."""
        from evaluator.gate import push

        assert errors.PushError is push.PushError


class TestKinds:
    """The bounded label values of rag_eval_case_errors_total{kind}."""

    def test_kinds_are_the_contract(self) -> None:
        """Written out literally: the classes must produce exactly these."""
        assert (
            "timeout",
            "connect",
            "http_status",
            "bad_response",
            "response_too_large",
            "out_of_memory",
            "stream_interrupted",
            "target_exception",
            "skipped_after_error",
        ) == ERROR_KINDS

    def test_every_case_error_class_is_listed(self) -> None:
        """No TargetError subclass in the module is left out of CASE_ERRORS."""
        subclasses = {
            value
            for value in vars(errors).values()
            if inspect.isclass(value)
            and issubclass(value, TargetError)
            and value is not TargetError
        }
        assert subclasses == set(CASE_ERRORS)


class TestTransient:
    """Whether a retry may help is decided when the error is made, never patched later."""

    def test_class_defaults(self) -> None:
        """A refused connection may pass on retry; a timeout inside the deadline is not retried."""
        assert TargetConnectError("refused").transient
        assert not TargetTimeout("slow").transient

    def test_raiser_overrides_the_default(self) -> None:
        """A TLS failure is a connect error that no retry fixes."""
        assert not TargetConnectError("bad certificate", transient=False).transient

    @pytest.mark.parametrize(("status", "transient"), [(429, True), (503, True), (500, False)])
    def test_http_status(self, status: int, transient: bool) -> None:
        """Rate limits and gateway errors are retried; a 500 from the service is not."""
        error = TargetHTTPStatusError(f"HTTP {status}", status=status)
        assert (status, transient) == (error.status, error.transient)

    def test_class_level_transient_is_refused(self) -> None:
        """A subclass that sets ``transient`` on the class would be shadowed: refused at once."""
        with pytest.raises(TypeError, match="transient_by_default"):
            type("Flaky", (TargetError,), {"transient": True})


def test_bad_response_context() -> None:
    """A mapping failure names its field and expression as attributes."""
    error = BadResponseError("response.ids ...", field="ids", expression="hits[].id")
    assert ("ids", "hits[].id", "bad_response") == (error.field, error.expression, error.kind)


def test_exit_codes() -> None:
    """0 success, 1 any failure, 2 only a failed gate, 130 Ctrl-C."""
    assert [0, 1, 2, 130] == [
        ExitCode.OK,
        ExitCode.ERROR,
        ExitCode.GATE_FAILED,
        ExitCode.INTERRUPTED,
    ]
