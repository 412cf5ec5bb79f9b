"""In-process target: a Python callable ``module:function``, sync or async."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evaluator.errors import ConfigError, TargetError, TargetExceptionError, TargetTimeout
from evaluator.models import Case, Dialogue, TargetResponse
from evaluator.targets.base import HistorySource, parse_default_response

__all__ = ["CallableTarget", "load_callable"]

TargetFunction = Callable[[Case, int], Any]


def load_callable(spec: str) -> TargetFunction:
    """Import ``module:function`` (``module:Class.method`` works too), from the installed
    packages or, after them, the working directory.

    Raises:
        ConfigError: when the module or attribute cannot be found or is not callable.
    """
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise ConfigError(f"target {spec!r}: expected 'module:function'")
    # as `python -m` and uvicorn do: a module in the working directory is importable, which a
    # console script's sys.path (its own bin directory first) would not allow
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"target {spec!r}: cannot import module {module_name!r}: {exc}") from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError(
                f"target {spec!r}: {module_name!r} has no attribute {part!r}"
            ) from exc
    if not callable(obj):
        raise ConfigError(f"target {spec!r}: {attr_path!r} is not callable")
    return obj  # type: ignore[no-any-return]


def _takes_dialogue(function: TargetFunction) -> bool:
    """Whether ``function`` can be called with a third positional argument."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: let the call say
        return True
    try:
        signature.bind(None, None, None)
    except TypeError:
        return False
    return True


class CallableTarget:
    """A Python callable receiving ``(case, k)`` (a conversation's turn: ``(case, k,
    dialogue)``) and returning the default-contract fields.

    The function may be sync (run in a worker thread so it cannot block the loop) or async,
    and may return a :class:`TargetResponse` or a mapping shaped like the HTTP response.
    """

    def __init__(
        self,
        spec: str,
        *,
        name: str | None = None,
        timeout: float = 30.0,
        history: HistorySource = "service",
    ) -> None:
        self.spec = spec
        #: where a conversation's history takes its answers from
        self.history: HistorySource = history
        self._function = load_callable(spec)
        self.name = name or spec.partition(":")[2]
        self._timeout = timeout
        self._is_async = inspect.iscoroutinefunction(self._function)
        self._converses = _takes_dialogue(self._function)

    def identity(self) -> Mapping[str, Any]:
        if self.history != "service":  # the default leaves every earlier hash as it was
            return {"kind": "callable", "spec": self.spec, "history": self.history}
        return {"kind": "callable", "spec": self.spec}

    async def query(self, case: Case, k: int, dialogue: Dialogue | None = None) -> TargetResponse:
        # a conversation's turn passes its dialogue as a third argument
        args: tuple[Any, ...] = (case, k)
        if dialogue is not None:
            if not self._converses:
                raise TargetExceptionError(
                    f"{self.name} takes no dialogue: a conversation's turn is called as "
                    "function(case, k, dialogue) (define it with a third parameter)"
                )
            args = (case, k, dialogue)
        deadline = asyncio.timeout(self._timeout)
        try:
            async with deadline:
                if self._is_async:
                    result = await self._function(*args)
                else:
                    result = await asyncio.to_thread(self._function, *args)
                if inspect.isawaitable(result):
                    # an object with ``async def __call__`` is not a coroutine function
                    result = await result
        except TargetError:
            raise
        except Exception as exc:
            if isinstance(exc, TimeoutError) and deadline.expired():
                raise TargetTimeout(
                    f"{self.name} did not return within {self._timeout:g}s"
                ) from None
            # includes a TimeoutError the callable raised itself, well inside our deadline
            raise TargetExceptionError(f"{self.name} raised {type(exc).__name__}: {exc}") from exc
        if isinstance(result, TargetResponse):
            return result
        return parse_default_response(result)

    async def aclose(self) -> None:
        return None
