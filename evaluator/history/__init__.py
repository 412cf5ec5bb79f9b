"""Quality over time: per-case outcomes across runs, stability classes and real drift.

- :mod:`~evaluator.history.store`: the SQLite store in the reports folder (write, read API).
- :mod:`~evaluator.history.stability`: a case's class over a window (pure).
- :mod:`~evaluator.history.drift`: the latest runs against the window before, paired (pure).
- :mod:`~evaluator.exact`: the exact tests both use (pure).
- :mod:`~evaluator.history.recorder`: the daemon's worker thread around the store.
"""
