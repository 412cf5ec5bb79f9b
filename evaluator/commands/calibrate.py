"""``evaluator calibrate --labels FILE REPORT...``: the judge's agreement with human labels.

Prints, per check and per judge (model + prompt version), agreement, Cohen's kappa with a
bootstrap 95% interval, the coverage (labelled answers not left uncertain by split votes),
the reviewers' agreement with each other on the answers two of them labelled (the human
ceiling; a check they disagree on below the floor is ill-defined), the confusion matrix and
the disagreements, as text, JSON or Markdown; stores the result (``--output``, default
``REPORTS_DIR/judge-calibration.json``) for ``evaluator gate`` to read. Exit 0 whatever
the result: the gate decides; exit 1, the stored calibration left as it was, when no label
matches a judged answer of the reports.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from evaluator.border import json_line
from evaluator.commands.flags import CommonOptions
from evaluator.config import load_settings
from evaluator.errors import ConfigError, ExitCode
from evaluator.judge.calibrate import (
    DEFAULT_FLOOR,
    DEFAULT_MIN_LABELS,
    calibrate,
    render_markdown,
    render_text,
)
from evaluator.judge.calibration_store import CALIBRATION_FILE
from evaluator.judge.derived import judged_of
from evaluator.judge.labels import read_reviews, reference_labels
from evaluator.report import read_report, write_json_atomic

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    labels: str
    reports: list[str]
    format: str
    floor: float
    min_labels: int
    output: str | None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="judged run reports")
    parser.add_argument("--labels", required=True, metavar="FILE", help="human labels (JSONL)")
    parser.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="text for the terminal (default), json for tools, markdown for a pull request",
    )
    parser.add_argument(
        "--floor", type=float, default=DEFAULT_FLOOR, help="kappa's lower bound to trust"
    )
    parser.add_argument(
        "--min-labels", type=int, default=DEFAULT_MIN_LABELS, help="labels needed to trust"
    )
    parser.add_argument("--output", metavar="FILE", help="where the result is stored")


def handle(options: Options) -> int:
    if not -1 <= options.floor <= 1:
        raise ConfigError("--floor must be between -1 and 1")
    if options.min_labels < 1:
        raise ConfigError("--min-labels must be at least 1")
    settings = load_settings(options.config)
    reviews = read_reviews(Path(options.labels))
    labels = reference_labels(reviews)
    runs = []
    for path in options.reports:
        judged = judged_of(read_report(path), path)
        if judged is None:
            raise ConfigError(f"{path}: the report was not judged (run `evaluator judge` first)")
        runs.append(judged)
    results = calibrate(
        labels, runs, floor=options.floor, min_labels=options.min_labels, reviews=reviews
    )
    output = Path(options.output) if options.output else settings.reports_dir / CALIBRATION_FILE
    if not results:
        # an empty calibration would replace the stored one: every judged rule of the gate
        # would then be refused, on a typo in --labels
        raise ConfigError(
            f"no label of {options.labels} ({len(labels)} read) matches a judged answer of "
            f"{', '.join(options.reports)}: nothing to calibrate; {output} is left as it was"
        )
    data = {
        "labels_file": options.labels,
        "reports": list(options.reports),
        "checks": [r.to_dict() for r in results],
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(data, output)
    if options.format == "json":
        print(json_line(json.dumps(data, indent=2, ensure_ascii=False)))
    elif options.format == "markdown":
        print(render_markdown(results))
    else:
        print(render_text(results))
        print(f"calibration: {output}")
    return ExitCode.OK
