"""How durations are shown to people, the same in every command: ms below a second.

`evaluator run` and `evaluator gate` once printed the same P95 as ``3.10ms`` and ``0.003s``;
one function keeps the run summary, the gate's rule lines, its Markdown table and its
diagnosis alike.
"""

from __future__ import annotations

__all__ = ["format_seconds"]


def format_seconds(value: float, *, signed: bool = False) -> str:
    """``0.48ms``, ``12.20ms``, ``998.50ms``, ``1.518s``; ``signed`` adds ``+`` to growth.

    Examples::

        format_seconds(0.0031)              # '3.10ms'
        format_seconds(2.8)                 # '2.800s'
        format_seconds(-0.024, signed=True)  # '-24.00ms'
    """
    sign = "+" if signed else ""
    if abs(value) < 1:
        return f"{value * 1000:{sign}.2f}ms"
    return f"{value:{sign}.3f}s"
