"""The run: cases sent to a target with bounded concurrency, scored, traced.

The runner (:mod:`evaluator.run.runner`), the event-loop lag probe it starts while a run is
in flight, and the OTLP traces of a run's cases. Above the configuration, below the daemon."""
