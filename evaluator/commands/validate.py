"""``evaluator validate FILE... [--against REPORT]``: every problem of every golden set, as
file:line; with ``--against``, each label is also audited against the evidence texts that a
saved run brought back (see :mod:`evaluator.scoring.labels`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from evaluator.commands.flags import CommonOptions
from evaluator.dataset import check_files, load_dataset
from evaluator.errors import ExitCode
from evaluator.models import Dataset
from evaluator.report import RunReport, read_report
from evaluator.scoring.labels import LabelAudit

__all__ = ["Options", "audit_against", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    files: list[str]
    against: str | None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="golden sets (JSONL)")
    parser.add_argument(
        "--against",
        metavar="REPORT",
        help="also audit each label against the evidence texts of this saved run report",
    )


def audit_against(dataset: Dataset, report: RunReport) -> tuple[int, int, list[str]]:
    """Audit the golden set's labels (as the file has them now) with the report's texts.

    Returns:
        (cases checked, cases of the golden set missing from the report, one ``file:line:``
        line per suspect label).
    """
    records = {r.id: r for r in report.cases}
    checked, absent, lines = 0, 0, []
    for case in dataset.questions:
        record = records.get(case.id)
        if record is None:
            absent += 1
            continue
        audit = LabelAudit.of(
            unanswerable=case.unanswerable,
            expected_facts=case.expected_facts,
            relevance=case.relevance,
            texts=record.texts,
            cut=record.cut_texts,
        )
        checked += audit.checked
        if audit.message is not None:
            lines.append(f"{dataset.path}:{case.line}: {case.id}: {audit.message}")
    return checked, absent, lines


def handle(options: Options) -> int:
    problems = check_files(options.files)
    for problem in problems:
        print(problem, file=sys.stderr)
    bad = len({p.path for p in problems})
    if problems:
        print(
            f"{len(problems)} problem(s) in {bad} of {len(options.files)} file(s)", file=sys.stderr
        )
        return ExitCode.ERROR
    print(f"{len(options.files)} file(s) valid")
    if options.against is None:
        return ExitCode.OK
    report = read_report(options.against)
    suspect = 0
    for path in options.files:
        checked, absent, lines = audit_against(load_dataset(path), report)
        for line in lines:
            print(line)  # findings of the audit, on stdout with its summary (in that order)
        suspect += len(lines)
        note = f", {absent} not in the report" if absent else ""
        print(
            f"label audit of {path} against {options.against}: {len(lines)} suspect of "
            f"{checked} checked{note}"
        )
    return ExitCode.ERROR if suspect else ExitCode.OK
