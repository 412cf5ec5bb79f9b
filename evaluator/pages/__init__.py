"""Human views of runs: the status page, the case view and self-contained HTML reports."""
