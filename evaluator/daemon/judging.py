"""The judge in the daemon: each complete run of a job with a judge is judged, and the
labelled cases are re-judged on a schedule of their own (judge drift).

Judge traffic has series of its own, never the target's (:mod:`evaluator.daemon.judge_series`,
exported by :class:`evaluator.daemon.exporter.Metrics` as every job's series are): calls by
outcome, latency, tokens, cost, the judged run's figures, and, from the drift checks,
agreement and kappa with the human labels beside the calibrated agreement floor (the shipped
alert ``RagEvalJudgeDrift`` compares the two). A judge that fails never fails the run nor
the daemon: the run is kept unjudged and the failure logged.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import structlog

from evaluator.config import HistoryConfig, JobConfig, Settings
from evaluator.daemon.exporter import Metrics
from evaluator.judge.agreement import vote_figures
from evaluator.judge.apply import calibration_of, judge_down, trust_problem, with_calibration
from evaluator.judge.calibration_store import CALIBRATION_FILE, read_calibration
from evaluator.judge.canary_verdicts import acceptance
from evaluator.judge.drift import rejudge_labelled
from evaluator.judge.judged_pass import CallEvent, judge_report
from evaluator.judge.labels import LabelsError, read_labels
from evaluator.judge.panel import JudgePanel
from evaluator.judge.prompts import PROMPT_VERSION
from evaluator.judge.record import JudgedRun
from evaluator.judge.settings import JudgeConfig
from evaluator.judge.store import VerdictStore
from evaluator.report import RunReport
from evaluator.run import otlp

__all__ = ["DaemonJudge"]

log = structlog.get_logger("evaluator.daemon")


class DaemonJudge:
    """One job's judge: its client, cache, and the job's labels on the daemon's metrics."""

    def __init__(
        self,
        config: JudgeConfig,
        metrics: Metrics,
        labels: tuple[str, str],
        reports_dir: Path,
        history: HistoryConfig | None = None,
    ) -> None:
        """``history``: the history settings whose ``keep_runs`` and ``max_age_days`` the
        verdict cache (in the same store) is pruned with."""
        self.config = config
        self.metrics = metrics
        self.labels = labels
        self.reports_dir = reports_dir
        self.panel = JudgePanel(config)
        history = history or HistoryConfig()
        self.cache = (
            VerdictStore(
                reports_dir, keep_passes=history.keep_runs, max_age_days=history.max_age_days
            )
            if config.cache
            else None
        )
        #: the latest judged report (the drift check re-judges its labelled cases)
        self.latest: RunReport | None = None
        #: why the latest judged run is not to be trusted (the status page's amber), or None
        self.problem: str | None = None

    @classmethod
    def for_job(
        cls, settings: Settings, job: JobConfig, metrics: Metrics, labels: tuple[str, str]
    ) -> DaemonJudge | None:
        config = settings.judge_for(job)
        if config is None:
            return None
        return cls(config, metrics, labels, settings.reports_dir, settings.history)

    def _on_call(self, event: CallEvent) -> None:
        self.metrics.judge_called(
            self.labels,
            outcome=event.error_kind or "ok",
            seconds=event.latency_seconds,
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            cost=self.config.cost(event.input_tokens, event.output_tokens),
        )

    async def judge(self, report: RunReport) -> RunReport:
        """``report`` with its judge block; unchanged (logged) when the judging breaks."""
        spans = otlp.active()
        # each call a span under its case span as it ends, when spans are exported: spread
        # over the pass, as the case spans are over the run
        span = None if spans is None else spans.judge_calls(report.cases, report.run_id)

        def on_call(event: CallEvent) -> None:
            self._on_call(event)
            if span is not None:
                span(event)

        try:
            judged = await judge_report(report, self.panel, cache=self.cache, on_call=on_call)
        except Exception as exc:  # the daemon never dies because the judge misbehaves
            log.error("judge_failed", job="/".join(self.labels), error=f"{type(exc).__name__}")
            return report
        judged = with_calibration(judged, self.reports_dir)
        # the stored calibration is a file from outside: read (bounded) off the event loop
        calibrated = await asyncio.to_thread(calibration_of, judged)
        down = judge_down(judged, self.config)
        if down is not None:
            log.warning("judge_down", job="/".join(self.labels), error=down)
        self.problem = down or trust_problem(judged, calibrated)
        self._export(judged, calibrated)
        if spans is not None and spans.events is not None:
            # the judged scores as evaluation events, tied to the case spans of the run
            spans.events.judged(report.cases, judged, report.run_id)
        judged_report = msgspec.structs.replace(report, judge=judged.to_dict())
        self.latest = judged_report
        return judged_report

    def _export(self, judged: JudgedRun, calibrated: dict[str, bool]) -> None:
        usage = judged.usage
        answered = usage.cache_hits + usage.calls
        self.metrics.run_judged(
            self.labels,
            skipped=usage.skipped,
            cache_hit_ratio=usage.cache_hits / answered if answered else 0,
            compromised=judged.compromised,
            calibrated=calibrated,
            metrics=judged.metrics,
            votes=vote_figures(judged.cases),
            canaries=acceptance(judged.canaries),
            lenient=judged.lenient,
        )

    async def check_drift(self) -> None:
        """Re-judge the labelled cases of the latest judged report; export the agreement."""
        labels_path = self.config.drift_labels
        report = self.latest
        if labels_path is None or report is None:
            return
        metrics, labels = self.metrics, self.labels
        try:
            # a labels file is outside input: read through the bounded reader, off the loop
            human = await asyncio.to_thread(read_labels, labels_path)
            points = await rejudge_labelled(report, self.panel, human)
        except LabelsError as exc:
            metrics.judge_drift_checked(labels, "bad_labels")
            log.error("judge_drift_failed", job="/".join(labels), error=str(exc))
            return
        except Exception as exc:  # the daemon never dies because the judge misbehaves
            metrics.judge_drift_checked(labels, "error")
            log.error("judge_drift_failed", job="/".join(labels), error=type(exc).__name__)
            return
        stored = await asyncio.to_thread(read_calibration, self.reports_dir / CALIBRATION_FILE)
        floors = stored.agreement_floors(self.config.model, PROMPT_VERSION)
        metrics.judge_drift_checked(
            labels,
            "ok",
            agreement={p.check: p.agreement for p in points},
            kappa={p.check: p.kappa for p in points},
            floors={p.check: floors[p.check] for p in points if p.check in floors},
        )
        log.info(
            "judge_drift",
            job="/".join(labels),
            checks={p.check: {"labels": p.labels, "agreement": p.agreement} for p in points},
        )

    async def aclose(self) -> None:
        await self.panel.aclose()
