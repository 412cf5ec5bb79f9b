"""Quality SLOs: the SLI table, windows and durations, error budgets and the burn-rate plan.

``sli`` (the table of service level indicators: each one's good and bad events in a run),
``duration`` (windows as Prometheus writes them), ``budget`` (error budget and burn rate
of counted events) and ``burn`` (the multiwindow, multi-burn-rate alerts an SLO gets, sized
for a job that runs every few minutes). Pure: no I/O, nothing of the daemon.
"""
