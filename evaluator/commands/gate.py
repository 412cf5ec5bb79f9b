"""``evaluator gate``: judge a candidate report (saved, or run now) against a baseline.

Exit 0 when every rule passes, 2 when the gate fails, 1 on any other problem
(incomparable or unreadable reports, a bad gates file, an unreachable target).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.commands.colour import colour_verdicts
from evaluator.commands.flags import CommonOptions, TargetFlags, add_repeat_flag, add_target_flags
from evaluator.commands.gcpolicy import batch_gc
from evaluator.commands.html import (
    add_html_flag,
    judge_labels,
    settings_redactor,
    write_html_report,
)
from evaluator.commands.notices import warn
from evaluator.config.sources import nothing_configured
from evaluator.errors import ConfigError, GateError, OutputError, PushError
from evaluator.gate.ceiling import FLAG as CEILING_FLAG
from evaluator.gate.ceiling import check_baseline_errors
from evaluator.gate.compare import check_run_comparable
from evaluator.gate.render import FORMATS, GateSources, json_pieces, render, render_junit
from evaluator.gate.repeats import Quarantine
from evaluator.gate.rules import GatesFile, load_gates
from evaluator.gate.verdict import GateResult, evaluate_gate
from evaluator.history.stability import Stability, stabilities
from evaluator.history.store import HistoryStore, StoreCorrupt, windows_of
from evaluator.judge.gating import JudgedGate, evaluate_judged
from evaluator.logs import use_colour
from evaluator.redaction import redactor
from evaluator.report import RunReport, read_report, write_bytes_atomic

if TYPE_CHECKING:
    from evaluator.config import Settings

__all__ = ["GateRun", "Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    baseline: str | None
    candidate: str | None
    #: with ``output`` and ``repeat``: only when the candidate is run now (no --candidate)
    target_flags: TargetFlags
    repeat: int
    output: str | None
    gates: str | None
    allow_dataset_change: bool
    significance: bool
    format: str
    junit: str | None
    html: str | None
    pushgateway: str | None
    worst: int
    baseline_max_error_rate: float | None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="the approved report (default: the job's configured baseline)",
    )
    parser.add_argument(
        "--candidate",
        metavar="FILE",
        help="a saved report to judge; without it the configured job is run now",
    )
    add_target_flags(parser)
    add_repeat_flag(parser)
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="where a live run writes the candidate report "
        "(default REPORTS_DIR/candidate-<run id>.json)",
    )
    parser.add_argument(
        "--gates",
        metavar="FILE",
        help="gate rules (default: gates_file setting, else config/gates.toml, else built-in)",
    )
    parser.add_argument(
        "--allow-dataset-change",
        action="store_true",
        help="compare reports of different golden sets on their shared cases",
    )
    parser.add_argument(
        "--significance",
        action="store_true",
        help="a drop rule fails only when its paired 95%% CI lies entirely beyond the allowance",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="stdout format")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML, one case per rule")
    add_html_flag(parser)
    parser.add_argument(
        "--pushgateway",
        metavar="URL",
        help="push the verdict and candidate summary to this Prometheus Pushgateway",
    )
    parser.add_argument(
        "--worst", type=int, default=10, metavar="N", help="cases listed per direction"
    )
    parser.add_argument(
        CEILING_FLAG,
        type=_ratio,
        metavar="RATE",
        help="refuse a baseline whose error rate is above RATE (default: [baseline] "
        "max_error_rate of the gates file, else 0.2; 1 accepts any baseline)",
    )


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number within 0..1, got {text!r}") from None
    if not 0 <= value <= 1:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"expected a number within 0..1, got {text!r}")
    return value


def _live_candidate(
    options: Options, settings: Settings, ceiling: float
) -> tuple[RunReport, Path, RunReport, str]:
    """Read the baseline, run the job now, write the candidate report.

    Returns:
        (baseline, its path, candidate, where the candidate was written).
    """
    # the run's machinery (targets, the HTTP client) only when a run is made: judging two
    # saved reports need not import it
    from evaluator.commands.common import (
        check_scored,
        exit_if_interrupted,
        plan_job,
        run_job,
        save_report,
        warn_id_mismatch,
    )

    plan = plan_job(settings, options.target_flags.job)
    baseline_path = options.baseline or plan.job.baseline
    if baseline_path is None:
        raise ConfigError("--baseline FILE is required (or set 'baseline' on the job)")
    baseline = read_report(baseline_path)
    # before the run: a baseline that will be refused is not worth running the golden set for
    check_baseline_errors(baseline.summary.error_rate, ceiling, str(baseline_path))
    check_run_comparable(
        baseline,
        k=plan.options.k,
        dataset=plan.dataset.name,
        dataset_hash=plan.dataset.content_hash,
        case_ids=[c.id for c in plan.dataset.cases],
        allow_dataset_change=options.allow_dataset_change,
    )
    if options.repeat > 1 and baseline.repeats is None:
        print(
            f"evaluator: note: the baseline has one run per case; {options.repeat} candidate "
            "runs per case still need a large drop to count as a regression",
            file=sys.stderr,
        )
    report = run_job(plan, options.repeat)
    output = Path(options.output or settings.reports_dir / f"candidate-{report.run_id}.json")
    save_report(report, output)
    print(f"candidate report: {output}", file=sys.stderr)
    exit_if_interrupted(report, Path(output))
    warn_id_mismatch(report)
    check_scored(report, f"candidate report {output}")
    return baseline, Path(baseline_path), report, str(output)


def _refuse_partial(report: RunReport, source: str) -> None:
    """A run stopped by Ctrl-C lacks cases at random: judging it would be meaningless."""
    if report.interrupted:
        raise GateError(
            f"{source}: the report of an interrupted run (only the {report.case_count} cases "
            "that finished before Ctrl-C); run the golden set again"
        )


def _saved_settings(config: str | None) -> tuple[Path | None, Callable[[], Settings]]:
    """The gates file the settings name, and the settings when something asks for them.

    With no config file and no ``EVALUATOR_`` variable the settings are the defaults (no
    gates file): they are loaded (pydantic, a tenth of judging two large reports) only
    when a page or the history store needs them.
    """
    if nothing_configured(config):
        return None, cache(partial(_load_settings, config))
    settings = _load_settings(config)
    return settings.gates_file, lambda: settings


def _load_settings(config: str | None) -> Settings:
    from evaluator.config import load_settings

    return load_settings(config)


def _classed_flaky(settings: Settings, target: str, dataset: str) -> tuple[str, ...]:
    """Cases the daemon's history store (in the reports folder) classes flaky for this job;
    none when there is no store or it cannot be read (the repeats still count)."""
    store = HistoryStore.open_readonly(settings.reports_dir)
    if store is None:
        return ()
    h = settings.history
    try:
        runs = store.complete_runs(target, dataset, h.window)
    except (StoreCorrupt, sqlite3.Error) as exc:
        warn(f"history store not read: {exc}")
        return ()
    windows = windows_of(runs)
    return tuple(c.case_id for c in stabilities(windows) if c.stability is Stability.FLAKY)


def _ceiling(options: Options, gates: GatesFile) -> float:
    """The most a baseline may have failed: ``--baseline-max-error-rate``, else the gates
    file's ``[baseline] max_error_rate``, else the default."""
    flag = options.baseline_max_error_rate
    return gates.ceiling if flag is None else flag


def _saved_baseline(options: Options) -> Path:
    """With ``--candidate FILE``: the ``--baseline FILE`` to judge it against; a flag that
    only applies when the job runs now is refused."""
    given = options.target_flags.given()
    given += ["--output"] if options.output is not None else []
    given += ["--repeat"] if options.repeat != 1 else []
    if given:
        flags = ", ".join(given)
        raise ConfigError(f"{flags} only apply without --candidate (when the job runs now)")
    if options.baseline is None:
        raise ConfigError("--baseline FILE is required")
    return Path(options.baseline)


def handle(options: Options) -> int:
    """Judge a saved candidate (``--candidate``) or the configured job run now."""
    if options.worst < 0:
        raise ConfigError("--worst must be >= 0")
    if options.candidate is None:
        return _gate_live(options)
    return _gate_saved(options, options.candidate)


def _gate_live(options: Options) -> int:
    """Run the job now, and gate its report against the baseline."""
    from evaluator.commands.common import settings_from_flags

    settings = settings_from_flags(options.config, options.target_flags)
    gates = load_gates(options.gates or settings.gates_file)
    with batch_gc():
        baseline, baseline_path, candidate, candidate_source = _live_candidate(
            options, settings, _ceiling(options, gates)
        )
        run = GateRun(
            options, lambda: settings, gates, baseline, baseline_path, candidate, candidate_source
        )
        return run.judge()


def _gate_saved(options: Options, candidate_source: str) -> int:
    """Gate two saved reports."""
    baseline_path = _saved_baseline(options)
    gates_file, settings = _saved_settings(options.config)
    gates = load_gates(options.gates or gates_file)
    with batch_gc(cycles=False):  # decoding and judging saved reports make no cycle
        baseline = read_report(baseline_path)
        # the candidate shares the baseline's golden-set cases: held once
        candidate = read_report(candidate_source, share=baseline)
        _refuse_partial(candidate, candidate_source)
        run = GateRun(
            options, settings, gates, baseline, baseline_path, candidate, candidate_source
        )
        return run.judge()


@dataclass(frozen=True)
class GateRun:
    """One gate of a candidate report against its baseline, as the command was asked for it.

    :meth:`judge` takes the steps in order: the baseline checked, the rules evaluated, the
    outputs written, the judged rules applied, then :meth:`verdict`, the one step that turns
    what was found into the exit code.
    """

    options: Options
    #: the settings, loaded when a step asks for them (a page, the history store, the
    #: calibration): judging two saved reports needs none
    settings: Callable[[], Settings]
    gates: GatesFile
    baseline: RunReport
    baseline_path: Path
    candidate: RunReport
    candidate_source: str

    def judge(self) -> int:
        """The verdict on the two reports, written in every format asked for; the exit code.

        The judged rules are applied before anything is written, so every output says the
        verdict the exit code is: a refused judged rule is a REFUSED gate (exit 1), never a
        pass printed before the refusal.

        Raises:
            ConfigError: a hard judged rule was refused (after the outputs say so).
        """
        self.check_baseline()
        result = replace(self.evaluate(), judged=self.judged())
        self.write_outputs(result)
        if result.refused:
            raise ConfigError("judged rule refused: " + "; ".join(result.refused))
        return result.exit_code

    def check_baseline(self) -> None:
        """Refuse an interrupted baseline, or one that failed above the ceiling."""
        source = str(self.baseline_path)
        _refuse_partial(self.baseline, source)
        ceiling = _ceiling(self.options, self.gates)
        check_baseline_errors(self.baseline.summary.error_rate, ceiling, source)

    def quarantine(self) -> Quarantine:
        """The gates file's quarantine, with the cases history classes flaky when it leaves
        flaky cases out."""
        quarantine = self.gates.quarantine
        if not quarantine.flaky:
            return quarantine
        flaky = _classed_flaky(self.settings(), self.candidate.target, self.candidate.dataset)
        return replace(quarantine, classed_flaky=flaky)

    def evaluate(self) -> GateResult:
        """Every rule on the two reports (with repeats and the quarantine)."""
        significance = self.options.significance
        return evaluate_gate(
            self.baseline,
            self.candidate,
            self.gates.rules,
            allow_dataset_change=self.options.allow_dataset_change,
            significance=significance,
            # the bootstrap (2,000 resamples) only when asked: 4 s of a 100,000-case gate
            with_intervals=significance,
            quarantine=self.quarantine(),
        )

    @property
    def sources(self) -> GateSources:
        """Where the baseline, the candidate and the rules came from, as the outputs say."""
        return GateSources(str(self.baseline_path), self.candidate_source, self.gates.source)

    def write_outputs(self, result: GateResult) -> None:
        """stdout in the format asked for, then each file and push asked for."""
        self.print_result(result)
        if self.options.junit:
            self.write_junit(result, self.options.junit)
        if self.options.html:
            self.write_html(result, self.options.html)
        if self.options.pushgateway:
            self.push(result, self.options.pushgateway)

    def print_result(self, result: GateResult) -> None:
        """The result on stdout: text (coloured on a terminal), markdown or JSON."""
        fmt = self.options.format
        if fmt == "json":
            # piece by piece (each a whole JSON value, so the redacting stdout sees every
            # string whole): a 100,000-case gate's JSON is tens of MB, held twice as one text
            for piece in json_pieces(result, self.sources):
                sys.stdout.write(piece)
            sys.stdout.write("\n")
            return
        text = render(result, self.sources, fmt, worst=self.options.worst)
        if fmt == "text" and use_colour(sys.stdout):
            text = colour_verdicts(text)
        print(text)

    def write_junit(self, result: GateResult, path: str) -> None:
        """JUnit XML, one test case per rule, redacted (a file leaving the process), written
        as reports are: to a temporary file renamed over ``path``, so a CI step never reads
        half of it and a symlink at ``path`` is replaced, never written through."""
        try:
            junit = redactor().redact_text(render_junit(result, self.sources))
            write_bytes_atomic(junit.encode("utf-8"), path)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc

    def write_html(self, result: GateResult, path: str) -> None:
        """The self-contained HTML report of the gate."""
        settings = self.settings()
        write_html_report(
            path,
            self.candidate,
            source=self.candidate_source,
            redact=settings_redactor(settings),
            gate=result,
            baseline_source=str(self.baseline_path),
            worst=self.options.worst,
            labels=judge_labels(settings, self.candidate),
        )

    def push(self, result: GateResult, url: str) -> None:
        """The verdict and the candidate's summary to a Pushgateway; a failed push is a
        warning (monitoring must not decide a release: the verdict stands)."""
        from evaluator.gate.push import push_result

        try:
            push_result(url, result)
        except PushError as exc:
            warn(str(exc))

    def judged(self) -> JudgedGate | None:
        """The gates file's ``[judged.*]`` rules on the reports' judge blocks (their lines,
        failed or refused: every output shows them); None without judged rules."""
        if not self.gates.judged:
            return None
        # here, not at the top: reading a calibration brings the judge's records and their
        # settings (pydantic), which a gate without judged rules never needs
        from evaluator.judge.calibration_store import CALIBRATION_FILE, read_calibration
        from evaluator.judge.derived import judged_of

        calibration = read_calibration(self.settings().reports_dir / CALIBRATION_FILE)
        # the judged figures derived from the verdicts each report holds, never as written
        baseline = judged_of(self.baseline, str(self.baseline_path))
        candidate = judged_of(self.candidate, self.candidate_source)
        return evaluate_judged(
            self.gates.judged, baseline, candidate, calibration, self.gates.judge
        )
