"""Benchmarks and the soak test (``make bench``); not collected by pytest.

Each ``bench_*.py`` module has ``run() -> dict``: named figures, each a mapping with
``value``, ``unit``, ``goal``, ``met`` and ``meaning`` (see :func:`support.figure`), plus
optional ``_details`` (raw runs, profiles). ``python -m tests.benchmarks.run`` runs them all.
"""
