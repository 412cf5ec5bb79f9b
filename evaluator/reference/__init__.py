"""The bundled reference RAG service: the embedded default that ``evaluator demo`` runs.

A small but real retrieval-augmented QA endpoint over a bilingual help-centre corpus:
BM25 keyword retrieval (``bm25s``), a rerank stage, an extractive answerer that quotes and
cites its evidence or refuses, and failure modes that can be switched on to watch the
evaluator react. Needs the optional ``evaluator[demo]`` dependencies; nothing else in
``evaluator`` imports this package at import time.

Start it with ``python -m evaluator.reference --port 8900`` or build the ASGI app with
:func:`evaluator.reference.app.create_app`.
"""

from __future__ import annotations

__all__: list[str] = []
