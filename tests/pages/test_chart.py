"""Trend charts: a metric over runs on a time axis, with its lines and marks; worked examples."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from evaluator.pages.chart import Limit, hash_changes, trend_chart
from evaluator.pages.health import alert_limits
from evaluator.pages.trend import RunPoint

ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules" / "alerts.yml"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _runs(*values: tuple[float, float | None], **hashes: str) -> list[RunPoint]:
    return [
        RunPoint(f"r{i}", at, "complete", {"mrr": v}, hashes.get("config", ""), "")
        for i, (at, v) in enumerate(values)
    ]


class TestGeometry:
    def test_points_sit_on_a_time_axis_and_a_ratio_on_zero_to_one(self) -> None:
        """x is proportional to each run's finish time; y spans 0..1 for a ratio."""
        rows = _runs((0.0, 0.5), (600.0, 1.0), (1800.0, 0.75))
        chart = trend_chart("mrr", rows, fmt=_fmt, ceiling=1.0)

        assert chart is not None
        # box 52..292 x 8..100: x at 0, 1/3 and 3/3 of 1800 s; y at 0.5, 1 and 0.75
        assert (52.0, 8.0, 292.0, 100.0) == chart.box
        assert "52,54 132,8 292,31" == chart.points
        assert ("0", "1.00") == (chart.y_low, chart.y_high)
        assert (3, 0.75, 0.5, 1.0, (292.0, 31.0)) == (
            chart.count,
            chart.last,
            chart.low,
            chart.high,
            chart.end,
        )

    def test_every_run_has_a_tick_and_a_few_are_labelled_with_their_time(self) -> None:
        """A tick per run; the first, the last and one between labelled (UTC), not crowded."""
        rows = _runs((0.0, 0.5), (600.0, 1.0), (1800.0, 0.75))
        chart = trend_chart("mrr", rows, fmt=_fmt)

        assert chart is not None
        assert [(52.0, "00:00", "start"), (132.0, "00:10", "middle"), (292.0, "00:30", "end")] == [
            (t.x, t.label, t.anchor) for t in chart.ticks
        ]
        assert "3 runs, 1970-01-01 00:00 – 00:30 UTC" == chart.window

    def test_runs_seconds_apart_are_labelled_to_the_second(self) -> None:
        """A window under ten minutes (the demo's, a test's) would read one minute thrice."""
        chart = trend_chart("mrr", _runs((0.0, 0.5), (100.0, 0.6), (300.0, 0.7)), fmt=_fmt)

        assert chart is not None
        assert ["00:00:00", "00:01:40", "00:05:00"] == [t.label for t in chart.ticks]

    def test_crowded_ticks_stay_unlabelled_and_a_day_long_window_has_dates(self) -> None:
        """Ticks too close to a labelled one stay unlabelled, and a window of days labels its
        ticks with dates."""
        rows = _runs(*((i * 60.0, 0.5) for i in range(10)), (2 * 86400.0, 0.5))
        chart = trend_chart("mrr", rows, fmt=_fmt)

        assert chart is not None
        labels = [t.label for t in chart.ticks if t.label]
        # the ten runs of the first minutes sit within a label's width of the first
        assert ["01-01 00:00", "01-03 00:00"] == labels
        assert 11 == len(chart.ticks)
        assert "11 runs, 1970-01-01 00:00 – 1970-01-03 00:00 UTC" == chart.window

    def test_missing_values_keep_their_run_and_a_run_alone_is_a_flat_line(self) -> None:
        """A run without a value keeps its tick but no dot, a single run is a flat line, and no
        value at all is no chart."""
        rows = _runs((0.0, 0.2), (100.0, None), (200.0, 0.4))
        chart = trend_chart("mrr", rows, fmt=_fmt, ceiling=1.0)
        assert chart is not None
        assert ["r0", "r2"] == [d.title.split(" · ")[0] for d in chart.dots]
        assert 3 == len(chart.ticks)

        alone = trend_chart("mrr", _runs((0.0, 0.4)), fmt=_fmt, ceiling=1.0)
        assert alone is not None
        assert "52,63.2 292,63.2" == alone.points
        assert trend_chart("mrr", _runs((0.0, None)), fmt=_fmt) is None


class TestLines:
    def test_limits_widen_the_range_and_sit_at_their_value(self) -> None:
        """The error ratio's alert line (0.05) is drawn even when every run is below it."""
        rows = [
            RunPoint(f"r{i}", i * 60.0, "complete", {"error_rate": v})
            for i, v in enumerate([0.0, 0.02, 0.01])
        ]
        chart = trend_chart("error_rate", rows, fmt=_fmt, limits=alert_limits())

        assert chart is not None
        (line,) = chart.limits
        # the top of the range is the threshold: y at the plot's top
        assert (8.0, "0.05", "alert") == (line.y, line.text, line.limit.kind)
        assert "0.05" == chart.y_high

    def test_only_the_charts_own_metric_limits_are_drawn(self) -> None:
        """Only the limits of the chart's own metric are drawn as lines."""
        rows = _runs((0.0, 0.9), (60.0, 0.8))
        limits = [
            Limit("mrr", 0.9, "baseline", "the baseline"),
            Limit("mrr", 0.89, "gate", "the gate's limit (may drop at most 0.01)"),
            Limit("recall_at_k", 0.5, "gate", "x"),
        ]
        chart = trend_chart("mrr", rows, fmt=_fmt, limits=limits, ceiling=1.0)

        assert chart is not None
        # 0.9 and 0.89 on 0..1 in a 92 px tall plot
        assert [("baseline", 17.2), ("gate", 18.1)] == [(d.limit.kind, d.y) for d in chart.limits]


class TestMarks:
    def test_hash_changes_name_the_golden_set_before_the_config(self) -> None:
        """A golden-set change is one mark (its config hash moves too); a config change alone
        is a config mark; runs without hashes mark nothing."""
        rows = [
            RunPoint("a", 0.0, "complete", {}, "c1", "d1"),
            RunPoint("b", 1.0, "complete", {}, "c2", "d1"),
            RunPoint("c", 2.0, "complete", {}, "c3", "d2"),
            RunPoint("d", 3.0, "complete", {}, "", ""),
            RunPoint("e", 4.0, "complete", {}, "c3", "d2"),
        ]
        assert [
            (1, "config", "config changed (c1 → c2)"),
            (2, "dataset", "golden set changed (d1 → d2)"),
        ] == hash_changes(rows)

    def test_a_change_and_the_run_where_it_began_are_vertical_marks(self) -> None:
        """A configuration change, a revert included, and the run where a change began are
        vertical marks."""
        rows = _runs((0.0, 0.9), (900.0, 0.9), (1800.0, 0.5), config="x")
        rows[1] = RunPoint("r1", 900.0, "complete", {"mrr": 0.9}, "y", "")
        chart = trend_chart("mrr", rows, fmt=_fmt, began="r2")

        assert chart is not None
        # x -> y at r1, y -> x at r2 (a revert is a change too), and the change's start
        assert [("config", 172.0, "r1"), ("config", 292.0, "r2"), ("began", 292.0, "r2")] == [
            (m.kind, m.x, m.run_id) for m in chart.markers
        ]


def test_the_alert_lines_are_the_shipped_rules_thresholds() -> None:
    """Each alert line is the threshold of the alert it names, read from alerts.yml."""
    groups = yaml.safe_load(ALERTS.read_text("utf-8"))["groups"]
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    for limit in alert_limits():
        (name,) = re.findall(r"RagEval\w+", limit.label)
        expr = rules[name]["expr"].strip()
        match = re.fullmatch(r"rag_eval_(\w+) ([<>]) ([\d.]+)", expr)
        assert match is not None, expr
        assert ("error_ratio", ">", limit.value) == (match[1], match[2], float(match[3]))
        assert limit.bad_above and "error_rate" == limit.metric
