"""An in-process target for ``evaluator run --target docs.examples.inprocess_target:ask``.

evaluator calls ``ask(case, k)`` once per case: an ``async def`` runs on evaluator's event
loop, a plain ``def`` in a worker thread. It returns a ``TargetResponse`` (or a dict shaped
like the default contract's JSON). This one wraps the bundled reference pipeline, so the
example runs anywhere; yours would call your own retriever and model.
"""

from __future__ import annotations

from evaluator import Case, Retrieved, TargetResponse
from evaluator.reference.pipeline import ReferenceRag

_rag = ReferenceRag()  # built once, at import: the index is not rebuilt per case


async def ask(case: Case, k: int) -> TargetResponse:
    result = await _rag.ask(case.question, top_k=k)
    return TargetResponse(
        retrieved=tuple(Retrieved(doc_id, score, text) for doc_id, score, text in result.retrieved),
        answer=result.answer,
        citations=result.citations,
        timings=result.timings,
    )
