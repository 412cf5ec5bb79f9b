"""The process-wide state is one module: its owners read and change it there, nowhere else."""

from __future__ import annotations

import threading

from evaluator import border, process_state, redaction
from evaluator.process_state import Slot
from evaluator.run import otlp


def test_a_change_is_atomic_across_threads() -> None:
    """Increments from many threads all land (the read and the write are one step)."""
    slot = Slot(0)

    def add() -> None:
        for _ in range(2000):
            slot.change(lambda n: n + 1)

    threads = [threading.Thread(target=add) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 16_000 == slot.get()


def test_swap_gives_back_what_it_replaced() -> None:
    """A slot's swap gives back the value it replaced."""
    slot: Slot[str | None] = Slot("a")
    assert "a" == slot.swap(None)
    assert slot.get() is None


def test_the_redactor_is_the_one_in_the_process_state() -> None:
    """register_secrets replaces the held redactor; redactor() reads that one."""
    grown = redaction.register_secrets(["tok-process-state"])
    assert grown is process_state.redactor.get() is redaction.redactor()
    assert "***" == redaction.redactor().redact_text("tok-process-state")
    # a secret registered again leaves the redactor as it was (no recompilation)
    assert grown is redaction.register_secrets(["tok-process-state"])


def test_the_surrogate_count_is_the_one_in_the_process_state() -> None:
    """The border's surrogate count is the process state's."""
    before = process_state.surrogates_replaced.get()
    assert "\ufffd" == border.text("\ud83d")
    assert before + 1 == process_state.surrogates_replaced.get() == border.surrogates_replaced()


def test_the_otlp_export_is_the_one_in_the_process_state() -> None:
    """install puts the export there, shutdown takes it out (nothing is sent: no spans)."""
    spans = otlp.install(enabled=True, endpoint="http://127.0.0.1:9/v1/traces")
    try:
        assert spans is not None
        assert spans is otlp.active() is process_state.spans.get()
    finally:
        otlp.shutdown()
    assert otlp.active() is None is process_state.spans.get()


def test_a_worker_is_one_thread_per_name_shared_by_every_caller() -> None:
    """Off-loop work of one kind queues in one thread (scoring, reports, stream framing), so
    the event loop waits for one piece of it at most, whoever submitted it."""
    scoring = process_state.worker("scoring")
    assert scoring is process_state.worker("scoring")
    assert scoring is not process_state.worker("reports")
    names = {scoring.submit(lambda: threading.current_thread().name).result() for _ in range(8)}
    assert 1 == len(names)
    assert names.pop().startswith("evaluator-scoring")
