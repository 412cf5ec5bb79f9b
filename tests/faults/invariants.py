"""The invariants the fuzz tier checks on every generated attack, as plain functions that
return what is violated (an empty list: holds), so each test states them in one line and a
failure message lists every violation at once.

The bounds are the issue's (24, "invariants fuzzed in CI") and docs/reliability.md's:

- a job's run counter advances and its report is written, whatever its target answered;
- ``/healthz`` answers within :data:`HEALTHZ_BOUND` (250 ms); the machine is shared, so
  one slow poll is noise and the invariant fails on :data:`HEALTHZ_SLOW_ALLOWED` or more
  polls over the bound, or any poll over :data:`HEALTHZ_HARD` (a stall of the daemon's
  own making recurs with every run of the attack and lasts for seconds);
- peak RSS (``VmHWM``, or ``ru_maxrss`` of a CLI) under :data:`RSS_BOUND`;
- no form of the configured secret in any output (:mod:`tests.support.secret_forms`);
- no ``internal error``, traceback or ``run_failed`` anywhere;
- exit codes as documented (README.md, "Exit codes"): 0, 1, and 2 only from the gate;
- terminal output holds no control character but newline and tab (a case id cannot
  forge a ``verdict:`` line or clear the screen).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from tests.faults.blocks import SECRET
from tests.support.secret_forms import leaked_forms

__all__ = [
    "HEALTHZ_BOUND",
    "HEALTHZ_HARD",
    "HEALTHZ_SLOW_ALLOWED",
    "RSS_BOUND",
    "MiB",
    "control_characters",
    "crashes",
    "healthz_violations",
    "leaks",
]

MiB = 1024 * 1024
HEALTHZ_BOUND = 0.250
HEALTHZ_SLOW_ALLOWED = 3
HEALTHZ_HARD = 2.0
#: the shipped Kubernetes memory limit is 512 Mi; the daemon idles near 70 MiB
RSS_BOUND = 400 * MiB

_CRASH = re.compile(r"internal error|Traceback \(most recent call last\)|\"run_failed\"")
# C0 but \t and \n, DEL, C1; a terminal acts on each
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def leaks(where: str, text: str) -> list[str]:
    """``where:secret:form`` for each form of the fuzzed secret found in ``text``."""
    return [f"{where}:{hit}" for hit in leaked_forms(text, {"FUZZ_TOKEN": SECRET})]


def crashes(where: str, text: str) -> list[str]:
    """Each internal error, traceback or ``run_failed`` event in ``text``, with context."""
    return [
        f"{where}: ...{text[max(m.start() - 120, 0) : m.end() + 200]!r}..."
        for m in _CRASH.finditer(text)
    ][:3]


def control_characters(where: str, text: str) -> list[str]:
    """Control characters a terminal would act on, in text meant for a terminal."""
    found = sorted({f"U+{ord(m.group()):04X}" for m in _CONTROL.finditer(text)})
    return [f"{where}: control characters {', '.join(found)}"] if found else []


def healthz_violations(latencies: Sequence[tuple[float, float, int]]) -> list[str]:
    """``(at, seconds, status)`` polls against the bound (see the module's docstring)."""
    problems = []
    failed = [p for p in latencies if p[2] != 200]
    if failed:
        problems.append(f"{len(failed)} /healthz polls not 200, first at {failed[0][0]:.1f}s")
    slow = [p for p in latencies if p[1] > HEALTHZ_BOUND]
    hard = [p for p in latencies if p[1] > HEALTHZ_HARD]
    if len(slow) >= HEALTHZ_SLOW_ALLOWED or hard:
        worst = max(p[1] for p in latencies)
        problems.append(
            f"/healthz over {HEALTHZ_BOUND * 1000:.0f} ms in {len(slow)} of {len(latencies)}"
            f" polls (worst {worst * 1000:.0f} ms at {max(latencies, key=lambda p: p[1])[0]:.1f}s)"
        )
    return problems


def all_of(*groups: Iterable[str]) -> list[str]:
    return [problem for group in groups for problem in group]
