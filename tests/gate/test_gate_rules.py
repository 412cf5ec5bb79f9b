"""Gate rules: loading config/gates.toml, and judging each kind at and around its limit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluator.errors import ConfigError
from evaluator.gate.repeats import Quarantine
from evaluator.gate.rules import (
    DEFAULT_GATES,
    DEFAULT_RULES,
    GATE_METRICS,
    GatesFile,
    Rule,
    check_rule,
    evaluate_rules,
    format_difference,
    format_value,
    load_gates,
    parse_rules,
    read_gates,
)
from evaluator.gate.stats import Interval
from evaluator.judge.gating import JudgedRule
from evaluator.report import report_from_dict
from tests.gate.factories import EXERCISE_BASELINE, EXERCISE_CANDIDATE, summary_report

REPO = Path(__file__).resolve().parents[2]


class TestDefaults:
    """The built-in rules and config/gates.toml are docs/gate.md's rules table."""

    def test_design_table(self) -> None:
        """Each default rule in words, as docs/gate.md writes it."""
        expected = [
            ("recall_at_k", "must not drop"),
            ("mrr", "may drop at most 0.01"),
            ("citation_precision", "may drop at most 0.01"),
            ("answer_accuracy", "must not drop"),
            ("p95_seconds", "may grow at most 20% (growth up to 50.00ms is noise)"),
            ("error_rate", "must not grow"),
        ]
        assert expected == [(r.metric, r.text) for r in DEFAULT_RULES]

    def test_shipped_file_is_the_defaults_with_a_floor_the_reference_service_holds(self) -> None:
        """config/gates.toml is the built-in (relative) rules plus an absolute
        citation-precision floor that the reference service (about 0.79) holds: a floor
        comes only from a gates file."""
        shipped = read_gates(REPO / "config" / "gates.toml").rules
        floor = Rule("citation_precision", "min", 0.75)
        at = next(i for i, r in enumerate(DEFAULT_RULES) if r.metric == "citation_precision")
        expected = [*DEFAULT_RULES[: at + 1], floor, *DEFAULT_RULES[at + 1 :]]
        assert expected == list(shipped)

    def test_the_ci_page_shows_the_shipped_gates_file(self, tmp_path: Path) -> None:
        """docs/ci.md's gates file, the first thing it shows, is config/gates.toml's rules."""
        page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
        block = re.search(r"```toml\n(# config/gates.toml.*?)```", page, re.S)
        assert block is not None
        written = tmp_path / "gates.toml"
        written.write_text(block.group(1), encoding="utf-8")
        shipped = read_gates(REPO / "config" / "gates.toml").rules
        assert shipped == read_gates(written).rules
        assert page.index("## First, a gates file") < page.index("## GitHub Actions")

    def test_no_file_uses_defaults(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a configured file and without config/gates.toml, the defaults apply."""
        monkeypatch.chdir(tmp_path)
        assert GatesFile("built-in defaults", DEFAULT_RULES) == load_gates(None) == DEFAULT_GATES

    def test_config_gates_toml_found(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """config/gates.toml in the working directory is used when no file is configured."""
        (tmp_path / "config").mkdir()
        (tmp_path / "config" / "gates.toml").write_text("[rules.mrr]\nmax_drop = 0.05\n")
        monkeypatch.chdir(tmp_path)
        assert GatesFile("config/gates.toml", (Rule("mrr", "max_drop", 0.05),)) == load_gates(None)

    def test_explicit_file_must_exist(self, tmp_path: Path) -> None:
        """A configured gates file that does not exist is an error, not the defaults."""
        missing = tmp_path / "nope.toml"
        with pytest.raises(ConfigError, match=r"nope\.toml: gates file does not exist"):
            load_gates(missing)


class TestLoading:
    """A bad gates file stops the gate with one line naming the file and the key."""

    def test_every_table_is_parsed_from_one_read(self, tmp_path: Path) -> None:
        """One read gives the rules, the quarantine, the baseline ceiling and the judged
        rules, each parsed by its own module."""
        path = tmp_path / "g.toml"
        path.write_text(
            "[rules.mrr]\nmax_drop = 0.01\n"
            '[quarantine]\ncases = ["c1"]\nflaky = true\n'
            "[baseline]\nmax_error_rate = 0.5\n"
            "[judged.judged_fact_recall]\nmin = 0.7\nadvisory = true\n",
            encoding="utf-8",
        )
        expected = GatesFile(
            str(path),
            (Rule("mrr", "max_drop", 0.01),),
            Quarantine(("c1",), True),
            0.5,
            (JudgedRule("judged_fact_recall", "min", 0.7, True),),
        )
        assert expected == read_gates(path)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('[rules.mrr]\nmin = 0.5\n[quarantine]\nflaky = "yes"\n', "quarantine.flaky"),
            ("[rules.mrr]\nmin = 0.5\n[baseline]\nmax_error_rate = 2\n", "baseline.max_error"),
            ("[rules.mrr]\nmin = 0.5\n[judged.nope]\nmin = 0.5\n", "judged.nope: unknown"),
        ],
    )
    def test_a_bad_table_beside_the_rules_stops_the_read(
        self, tmp_path: Path, text: str, message: str
    ) -> None:
        """A bad [quarantine], [baseline] or [judged.*] table is refused with the rules, at
        the read, naming the file and the key."""
        path = tmp_path / "g.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"g\.toml: {message}"):
            read_gates(path)

    def test_several_rules_per_metric(self) -> None:
        """Each key of a metric's table is one rule, in file order."""
        data = {"rules": {"mrr": {"min": 0.5, "max_drop": 0.02}, "p95_seconds": {"max": 3}}}
        expected = (
            Rule("mrr", "min", 0.5),
            Rule("mrr", "max_drop", 0.02),
            Rule("p95_seconds", "max", 3.0),
        )
        assert expected == parse_rules(data, "g.toml")

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[rules.mrr]\nmax_dorp = 0.01\n", "g.toml: rules.mrr.max_dorp: unknown key (known: "),
            ("[rules.mrr]\nmax_dorp = 0.01\n", "did you mean 'max_drop'?"),
            ("[rules.p95_seconds]\nnoise_floor = 0.1\nmax = 1\n", "mean 'noise_floor_seconds'?"),
            ("[rules.p95_seconds]\nnoise_floor_seconds = 0.1\n", "noise_floor_seconds alone is"),
            ("[rules.mrr]\nmin = 0.5\nnoise_floor_seconds = 0.1\n", "only latency metrics"),
            (
                "[rules.p95_seconds]\nmax = 1\nnoise_floor_seconds = -1\n",
                "rules.p95_seconds.noise_floor_seconds: must be >= 0",
            ),
            ("[rules.mrrr]\nmax_drop = 0.01\n", "g.toml: rules.mrrr: unknown metric (known: "),
            ('[rules.mrr]\nmax_drop = "0.01"\n', "g.toml: rules.mrr.max_drop: must be a finite"),
            ("[rules.mrr]\nmax_drop = true\n", "g.toml: rules.mrr.max_drop: must be a finite"),
            ("[rules.mrr]\nmax_drop = nan\n", "g.toml: rules.mrr.max_drop: must be a finite"),
            ("[rules.mrr]\nmax_drop = -0.01\n", "g.toml: rules.mrr.max_drop: must be >= 0"),
            ("[rules.mrr]\n", "g.toml: rules.mrr: expected a table with at least one of"),
            ("[rules]\nmrr = 0.01\n", "g.toml: rules.mrr: expected a table"),
            ("[rules.citation_precision]\nmin = 97\n", "rules.citation_precision.min: 97 is"),
            ("[rules.p95_seconds]\nmax_drop = 0.1\n", "rules.p95_seconds.max_drop: p95_seconds is"),
            ("[rules.mrr]\nmax_growth = 0.1\n", "g.toml: rules.mrr.max_growth: mrr is better when"),
            ("threshold = 1\n", "g.toml: threshold: unknown top-level key"),
            ("", "g.toml: rules: no rules"),
            ("[rules.mrr\n", "g.toml: invalid TOML: "),
        ],
    )
    def test_bad_file(self, tmp_path: Path, text: str, message: str) -> None:
        """Every mistake is one line that starts with the file and names the key."""
        path = tmp_path / "g.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            read_gates(path)
        error = str(info.value)
        assert "\n" not in error
        assert error.startswith(str(tmp_path)), error
        assert message in error

    def test_latency_growth_rules_get_the_noise_floor_of_their_table(self) -> None:
        """noise_floor_seconds modifies the table's growth rules; absent, 0.05 s applies."""
        data = {
            "rules": {
                "p95_seconds": {"max_relative_growth": 0.2, "max": 3, "noise_floor_seconds": 0.1},
                "p50_seconds": {"max_growth": 0.01},
                "error_rate": {"max_growth": 0.0},
            }
        }
        assert (
            Rule("p95_seconds", "max_relative_growth", 0.2, noise_floor=0.1),
            Rule("p95_seconds", "max", 3.0),
            Rule("p50_seconds", "max_growth", 0.01, noise_floor=0.05),
            Rule("error_rate", "max_growth", 0.0),
        ) == parse_rules(data, "g.toml")

    def test_every_metric_known(self) -> None:
        """Every gate metric can be named in a rule."""
        data = {
            "rules": {
                m: ({"max_growth": 0} if m in ("false_refusal_rate", "error_rate") else {"min": 0})
                for m in GATE_METRICS
            }
        }
        assert len(GATE_METRICS) == len(parse_rules(data, "g.toml"))


class TestBoundaries:
    """A drop (or growth) of exactly the allowance passes; a hair more fails."""

    @pytest.mark.parametrize(
        ("rule", "baseline", "candidate", "passed"),
        [
            (Rule("mrr", "max_drop", 0.01), 0.76, 0.75, True),
            (Rule("mrr", "max_drop", 0.01), 0.76, 0.7499, False),
            (Rule("mrr", "max_drop", 0.01), 0.76, 0.74, False),
            (Rule("recall_at_k", "max_drop", 0.0), 0.9, 0.9, True),
            (Rule("recall_at_k", "max_drop", 0.0), 0.9, 0.8999, False),
            (Rule("recall_at_k", "max_drop", 0.0), 0.3, 0.1 + 0.2, True),
            (Rule("p95_seconds", "max_relative_growth", 0.2), 2.0, 2.4, True),
            (Rule("p95_seconds", "max_relative_growth", 0.2), 2.0, 2.41, False),
            (Rule("p95_seconds", "max_relative_growth", 0.2), 0.0, 0.0, True),
            (Rule("p95_seconds", "max_relative_growth", 0.2), 0.0, 0.001, False),
            # the noise floor: a 4 ms P95 gaining 3 ms (+75%) is noise, 2 s -> 2.41 s is not
            (Rule("p95_seconds", "max_relative_growth", 0.2, 0.05), 0.004, 0.007, True),
            (Rule("p95_seconds", "max_relative_growth", 0.2, 0.05), 0.004, 0.054, True),
            (Rule("p95_seconds", "max_relative_growth", 0.2, 0.05), 0.004, 0.0541, False),
            (Rule("p95_seconds", "max_relative_growth", 0.2, 0.05), 2.0, 2.41, False),
            (Rule("p95_seconds", "max_growth", 0.0, 0.05), 1.0, 1.05, True),
            (Rule("p95_seconds", "max_growth", 0.0, 0.05), 1.0, 1.06, False),
            (Rule("citation_precision", "min", 0.97), 0.99, 0.97, True),
            (Rule("citation_precision", "min", 0.97), 0.99, 0.9699, False),
            (Rule("p95_seconds", "max", 3.0), 1.0, 3.0, True),
            (Rule("p95_seconds", "max", 3.0), 1.0, 3.001, False),
            (Rule("error_rate", "max_growth", 0.0), 0.01, 0.01, True),
            (Rule("error_rate", "max_growth", 0.0), 0.01, 0.0101, False),
            (Rule("error_rate", "max_growth", 0.02), 0.01, 0.03, True),
        ],
    )
    def test_limit(self, rule: Rule, baseline: float, candidate: float, passed: bool) -> None:
        """Judged against the limit with float noise tolerated."""
        result = check_rule(rule, baseline, candidate)
        assert (passed, True) == (result.passed, result.applicable)

    def test_exercise_mrr_boundary_from_report(self) -> None:
        """MRR .76 -> .75 read back from report JSON (sums of floats) still passes."""
        b = report_from_dict(summary_report({"mrr": 0.76}, n=37))
        c = report_from_dict(summary_report({"mrr": 0.75}, n=41))
        (result,) = evaluate_rules([Rule("mrr", "max_drop", 0.01)], b.summary, c.summary)
        assert result.passed


class TestNotApplicable:
    """A metric that is null on either side makes its rule not applicable, not failed."""

    @pytest.mark.parametrize(("baseline", "candidate"), [(None, 0.5), (0.5, None), (None, None)])
    def test_null_side(self, baseline: float | None, candidate: float | None) -> None:
        """Drop rules need both values."""
        result = check_rule(Rule("answer_accuracy", "max_drop", 0.0), baseline, candidate)
        assert (True, False, "n/a") == (result.passed, result.applicable, result.status)
        assert "not applicable (null in the" in result.message

    def test_floor_judges_candidate_alone(self) -> None:
        """A floor reads only the candidate: a null baseline does not excuse a low value."""
        result = check_rule(Rule("citation_precision", "min", 0.97), None, 0.5)
        assert (False, True) == (result.passed, result.applicable)

    def test_floor_null_candidate(self) -> None:
        """A floor on a metric the candidate does not have is not applicable."""
        result = check_rule(Rule("citation_precision", "min", 0.97), 0.99, None)
        assert (True, False) == (result.passed, result.applicable)


class TestMessages:
    """Each failure line names the metric, both values, the difference and the rule."""

    def test_exercise_lines(self) -> None:
        """The gate exercise: exactly MRR, citation precision and P95 fail, all reported."""
        b = report_from_dict(summary_report(EXERCISE_BASELINE))
        c = report_from_dict(summary_report(EXERCISE_CANDIDATE))
        results = evaluate_rules(DEFAULT_RULES, b.summary, c.summary)
        expected = [
            "mrr: baseline 0.7600, candidate 0.7400, difference -0.0200; "
            "rule: may drop at most 0.01",
            "citation_precision: baseline 0.9800, candidate 0.9600, difference -0.0200; "
            "rule: may drop at most 0.01",
            "p95_seconds: baseline 2.000s, candidate 2.800s, difference +800.00ms (+40.0%); "
            "rule: may grow at most 20% (growth up to 50.00ms is noise)",
        ]
        assert expected == [r.message for r in results if not r.passed]


class TestSignificance:
    """With significance, a drop rule fails only when the whole interval is beyond the allowance."""

    RULE = Rule("mrr", "max_drop", 0.01)

    def _iv(self, low: float, high: float) -> Interval:
        return Interval("mrr", 100, (low + high) / 2, low, high)

    @pytest.mark.parametrize(
        ("low", "high", "passed"),
        [
            (-0.05, 0.01, True),  # includes no change
            (-0.05, -0.01, True),  # touches the allowance exactly
            (-0.05, -0.0101, False),  # entirely beyond
        ],
    )
    def test_interval_judges(self, low: float, high: float, passed: bool) -> None:
        """The point values (a drop of 0.02) would fail; the interval decides."""
        result = check_rule(self.RULE, 0.76, 0.74, interval=self._iv(low, high), significance=True)
        assert (passed, "interval") == (result.passed, result.judged_by)
        assert "significance" in result.message

    def test_without_interval_falls_back(self) -> None:
        """No paired cases: the point values judge, and the message says so."""
        result = check_rule(self.RULE, 0.76, 0.74, significance=True)
        assert (False, "point") == (result.passed, result.judged_by)
        assert "no paired interval" in result.message

    def test_growth_rules_unchanged(self) -> None:
        """Significance concerns drops only: P95 growth is still judged on the values."""
        rule = Rule("p95_seconds", "max_relative_growth", 0.2)
        iv = Interval("p95_seconds", 100, 0.0, -1.0, 1.0)
        result = check_rule(rule, 2.0, 2.8, interval=iv, significance=True)
        assert (False, "point") == (result.passed, result.judged_by)


def test_floor_failed_by_baseline_too() -> None:
    """A floor the baseline already misses says so: the regression is not the candidate's."""
    result = check_rule(Rule("citation_precision", "min", 0.97), 0.80, 0.79)
    assert not result.passed
    assert result.message.endswith("rule: at least 0.97 (the baseline fails it too)")


class TestDurationsAlike:
    """run and gate show a duration the same way: milliseconds below a second."""

    @pytest.mark.parametrize(
        ("seconds", "shown"),
        [(0.00048, "0.48ms"), (0.0122, "12.20ms"), (0.9985, "998.50ms"), (1.518, "1.518s")],
    )
    def test_gate_values_match_the_run_summary(self, seconds: float, shown: str) -> None:
        """The gate prints durations as the run summary does."""
        from evaluator.commands.display import _fmt

        assert shown == format_value("p95_seconds", seconds) == _fmt(seconds, seconds=True)

    def test_differences_are_signed_the_same_way(self) -> None:
        """Differences of durations are signed, with their relative change."""
        assert "-24.00ms (-37.5%)" == format_difference("p95_seconds", 0.064, 0.040)


@pytest.mark.parametrize(
    "rule",
    [
        Rule("citation_precision", "min", 0.75),
        Rule("error_rate", "max", 0.1),
        Rule("mrr", "max_drop", 0.01),
        Rule("recall_at_k", "max_drop", 0.0),
        Rule("error_rate", "max_growth", 0.02),
        Rule("p95_seconds", "max_relative_growth", 0.2, noise_floor=0.05),
    ],
    ids=lambda r: r.key,
)
@pytest.mark.parametrize("baseline", [0.0, 0.012, 0.5, 0.9, 2.0])
def test_a_rules_bound_is_the_edge_of_what_it_allows(rule: Rule, baseline: float) -> None:
    """The line the status page draws for a rule: the rule allows its bound and fails a value
    just beyond it, on the side ``bad_above`` names."""
    bound = rule.bound(baseline)
    assert bound is not None
    step = 1e-6 if rule.bad_above else -1e-6
    assert rule.allows(baseline, bound)
    assert not rule.allows(baseline, bound + step)
    assert rule.allows(baseline, bound - step)


def test_a_bound_worked_out_and_none_without_a_baseline() -> None:
    """P95 0.012 s may grow 20% or 50 ms, whichever is more: up to 0.062 s."""
    p95 = Rule("p95_seconds", "max_relative_growth", 0.2, noise_floor=0.05)
    assert 0.062 == pytest.approx(p95.bound(0.012))
    assert 2.4 == pytest.approx(p95.bound(2.0))
    assert 0.89 == pytest.approx(Rule("mrr", "max_drop", 0.01).bound(0.9))
    assert Rule("mrr", "max_drop", 0.01).bound(None) is None
    assert 0.75 == Rule("citation_precision", "min", 0.75).bound(None)
