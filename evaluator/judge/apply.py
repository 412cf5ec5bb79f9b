"""Judging a saved report, start to end: read it (with its evidence texts), judge it, write
it back atomically with its ``judge`` block. Used by ``evaluator run`` (a job with a judge)
and ``evaluator judge REPORT``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from evaluator.judge.client import JudgeClient
from evaluator.judge.record import JudgedRun
from evaluator.judge.run import judge_report
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from evaluator.report import RunReport, read_report, write_report

__all__ = ["format_judged", "judge_file"]


def judge_file(
    path: Path,
    config: JudgeConfig,
    *,
    cache_folder: Path | None,
    output: Path | None = None,
) -> tuple[RunReport, JudgedRun]:
    """Judge the report at ``path`` and write it (to ``output``, default in place).

    ``cache_folder`` holds the history store whose verdict cache is used (None: no cache).
    """
    report = read_report(path)
    cache = VerdictStore(cache_folder) if cache_folder is not None and config.cache else None

    async def go() -> JudgedRun:
        async with JudgeClient(config) as client:
            return await judge_report(report, client, cache=cache)

    judged = asyncio.run(go())
    report = dataclasses.replace(report, judge=judged.to_dict())
    write_report(report, output or path)
    return report, judged


def format_judged(judged: JudgedRun) -> str:
    """The judged metrics and the judge's own health, for the terminal."""
    lines = [f"judge: {judged.model} (prompts {judged.prompt_version})"]
    if judged.compromised:
        lines.append(
            "  COMPROMISED: a canary answer was judged supported; judged metrics are advisory"
        )
    for name, value in judged.metrics.items():
        shown = "n/a" if value is None else f"{value:.3f}"
        lines.append(f"  {name:<24} {shown}")
    u = judged.usage
    errors = ", ".join(f"{k} {v}" for k, v in sorted(u.errors.items())) or "none"
    lines.append(
        f"  calls {u.calls}, cache hits {u.cache_hits}, skipped {u.skipped}, errors: {errors}; "
        f"tokens {u.input_tokens}+{u.output_tokens}, cost {u.cost:.4f}"
    )
    fooled = sum(1 for c in judged.canaries if c.fooled)
    lines.append(f"  canaries {len(judged.canaries)}, fooled {fooled}")
    return "\n".join(lines)
