"""evaluator: continuous quality evaluation of RAG services.

The Python API, for callable targets (``module:function`` returning a
:class:`TargetResponse` for a :class:`Case`) and for judging reports in code
(:func:`evaluate_gate`). Everything else is reached through the ``evaluator`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaluator._version import __version__
from evaluator.models import Case, Retrieved, TargetResponse

if TYPE_CHECKING:
    from evaluator.gate.verdict import evaluate_gate

__all__ = ["Case", "Retrieved", "TargetResponse", "__version__", "evaluate_gate"]


def __getattr__(name: str) -> Any:
    # The gate (and the report codec under it) costs ~50 ms to import; every command
    # imports this package, and most never judge a report, so it loads on first use.
    if name == "evaluate_gate":
        from evaluator.gate.verdict import evaluate_gate

        return evaluate_gate
    raise AttributeError(f"module 'evaluator' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
