"""evaluator: continuous quality evaluation of RAG services."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
