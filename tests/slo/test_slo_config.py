"""``[[slos]]`` and OpenSLO files in the configuration: read, checked against the jobs, and
refused naming the field where it was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.cli import main
from evaluator.config import load_settings
from evaluator.errors import ConfigError

GOLDEN = Path(__file__).resolve().parents[2] / "evals" / "rag_cases.jsonl"

JOBS = f"""
[[targets]]
name = "ref"
url = "http://127.0.0.1:9/rag"

[[targets]]
name = "other"
url = "http://127.0.0.1:9/other"

[[jobs]]
target = "ref"
dataset = "{GOLDEN}"
interval_seconds = 60

[[jobs]]
target = "other"
dataset = "{GOLDEN}"
dataset_label = "one"
interval_seconds = 60

[[jobs]]
target = "other"
dataset = "{GOLDEN}"
dataset_label = "two"
cron = "0 9 * * 1-5"
"""

SLO = """
[[slos]]
name = "answers"
job = "ref"
sli = "answer_correct"
objective = 0.99
window = "28d"
"""


def _load(tmp_path: Path, text: str, top: str = "") -> object:
    path = tmp_path / "evaluator.toml"
    path.write_text(top + JOBS + text, "utf-8")
    return load_settings(path)


def _refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, text)
    return str(raised.value)


def test_an_slo_table_is_read(tmp_path: Path) -> None:
    """The shape users write: name, job, sli, objective, window."""
    settings = _load(tmp_path, SLO)
    (slo,) = settings.slos  # type: ignore[attr-defined]
    assert ("answers", ("ref",), "answer_correct", 0.99, 2419200) == (
        slo.name, slo.jobs, slo.sli, slo.objective, slo.window_seconds
    )  # fmt: skip


@pytest.mark.parametrize(
    ("job", "keys"),
    [
        ('"ref"', ["ref/rag_cases"]),
        ('"other/one"', ["other/one"]),
        ('["ref", "other/one"]', ["ref/rag_cases", "other/one"]),
    ],
)
def test_a_job_is_named_by_its_target_or_target_and_dataset(
    tmp_path: Path, job: str, keys: list[str]
) -> None:
    """As the status page names jobs: the target alone when it has one job."""
    settings = _load(tmp_path, SLO.replace('job = "ref"', f"job = {job}"))
    slo = settings.slos[0]  # type: ignore[attr-defined]
    assert keys == [j.key for j in settings.slo_jobs(slo)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('sli = "answer_correct"', 'sli = "answer_corect"'),
            'slos.0.sli: unknown SLI (did you mean "answer_correct"?)',
        ),
        (("objective = 0.99", "objective = 1"), "slos.0.objective: Input should be less than 1"),
        (('window = "28d"', 'window = "30m"'), "slos.0.window: '30m' is shorter than an hour"),
        (('window = "28d"', 'window = "4 weeks"'), "slos.0.window: '4 weeks' is not a duration"),
        (('job = "ref"', 'job = "nope"'), "slos.0.job: no job named 'nope' (known: "),
        (
            ('job = "ref"', 'job = "other"'),
            "slos.0.job: 'other' has several jobs (other/one, other/two): name one as",
        ),
        (('sli = "answer_correct"', 'sli = "latency"'), "slos.0.threshold_seconds: sli"),
        (
            ('sli = "answer_correct"', 'sli = "answer_correct"\nthreshold_seconds = 2'),
            "slos.0.threshold_seconds: only for sli 'latency'",
        ),
        (
            ('sli = "answer_correct"', 'sli = "judged"\ncheck = "fact_support"'),
            "slos.0.sli: 'judged' counts judged cases, and job(s) ['ref/rag_cases'] have no",
        ),
        (("objective = 0.99", "objektive = 0.99"), "slos.0.objektive: unknown key (did you mean"),
        (('name = "answers"', 'name = "a b"'), "slos.0.name: an SLO name is 1 to 63 letters"),
        (
            ('job = "ref"', 'job = "other/two"'),
            "slos.0.window: 28d cannot hold enough runs of the job (every 3d) to page",
        ),
    ],
)
def test_a_bad_slo_stops_the_load_naming_the_field(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    """Each mistake names the table's field (the weekday cron's longest gap is a weekend)."""
    assert message in _refused(tmp_path, SLO.replace(*change))


def test_two_slos_of_one_name_are_refused(tmp_path: Path) -> None:
    """An SLO's name is its series' label: it must be unique."""
    assert "slos.1.name: another SLO is called 'answers'" in _refused(tmp_path, SLO + SLO)


def test_slos_can_be_set_whole_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list of tables from EVALUATOR_SLOS (JSON), its mistakes named as the variable."""
    table = {"name": "e", "job": "ref", "sli": "no_error", "objective": 0.999}
    monkeypatch.setenv("EVALUATOR_SLOS", json.dumps([table]))
    assert "no_error" == _load(tmp_path, "").slos[0].sli  # type: ignore[attr-defined]
    monkeypatch.setenv("EVALUATOR_SLOS", json.dumps([{**table, "objective": 2}]))
    assert "environment variable EVALUATOR_SLOS (slos.0.objective)" in _refused(tmp_path, "")


OPENSLO = """\
apiVersion: openslo/v1
kind: Service
metadata:
  name: rag
spec:
  description: the reference RAG service
---
apiVersion: openslo/v1
kind: SLI
metadata:
  name: answer-correct
spec:
  ratioMetric:
    counter: true
    good:
      metricSource:
        type: evaluator
        spec:
          sli: answer_correct
    total:
      metricSource:
        type: evaluator
        spec:
          sli: answer_correct
---
apiVersion: openslo/v1
kind: SLO
metadata:
  name: answers
  displayName: Answers are right
spec:
  service: ref
  indicatorRef: answer-correct
  budgetingMethod: Occurrences
  timeWindow:
    - duration: 28d
      isRolling: true
  objectives:
    - target: 0.99
---
apiVersion: openslo/v1
kind: SLO
metadata:
  name: fast
spec:
  service: other/one
  budgetingMethod: Occurrences
  timeWindow:
    - duration: 7d
      isRolling: true
  objectives:
    - targetPercent: 95
  indicator:
    metadata:
      name: fast
    spec:
      ratioMetric:
        counter: true
        good:
          metricSource:
            type: evaluator
            spec:
              sli: latency
              threshold_seconds: 2.5
        total:
          metricSource:
            type: evaluator
            spec:
              sli: latency
"""


def _with_openslo(tmp_path: Path, text: str, slos: str = "") -> object:
    (tmp_path / "slos.yaml").write_text(text, "utf-8")
    return _load(tmp_path, slos, top='openslo_files = ["slos.yaml"]\n')


def test_an_openslo_file_joins_the_slos(tmp_path: Path) -> None:
    """Its SLOs, by reference or inline, read as the same tables would be; the file's
    path is relative to the configuration file."""
    settings = _with_openslo(tmp_path, OPENSLO, SLO.replace('"answers"', '"errors"'))
    got = [
        (s.name, s.jobs, s.sli, s.objective, s.window, s.threshold_seconds)
        for s in settings.slos  # type: ignore[attr-defined]
    ]
    assert [
        ("errors", ("ref",), "answer_correct", 0.99, "28d", None),
        ("answers", ("ref",), "answer_correct", 0.99, "28d", None),
        ("fast", ("other/one",), "latency", 0.95, "7d", 2.5),
    ] == got


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            (
                "budgetingMethod: Occurrences\n  timeWindow:\n    - duration: 28d",
                "budgetingMethod: Timeslices\n  timeWindow:\n    - duration: 28d",
            ),
            "document 3 (SLO 'answers'): spec.budgetingMethod: 'Timeslices': only Occurrences",
        ),
        (
            (
                "type: evaluator\n        spec:\n          sli: answer_correct\n    total",
                "type: Prometheus\n        spec:\n          sli: answer_correct\n    total",
            ),
            "document 3 (SLO 'answers'): SLI 'answer-correct'.spec.ratioMetric.good.metricSource"
            ".type: 'Prometheus': only 'evaluator'",
        ),
        (
            ("    - target: 0.99", "    - target: 0.99\n      op: lte"),
            "document 3 (SLO 'answers'): spec.objectives[0].op: not read by evaluator",
        ),
        (
            ("    - target: 0.99", "    - target: 1.5"),
            "document 3 (SLO 'answers'): spec.objectives[0].target: Input should be less than 1",
        ),
        (
            ("  service: ref\n", "  service: nope\n"),
            "document 3 (SLO 'answers'): spec.service: no job named 'nope'",
        ),
        (
            ("duration: 7d\n      isRolling: true", "duration: 7d\n      isRolling: false"),
            "document 4 (SLO 'fast'): spec.timeWindow[0].isRolling: only rolling windows",
        ),
        (
            ("              threshold_seconds: 2.5\n", ""),
            "document 4 (SLO 'fast'): spec.indicator.spec.ratioMetric.good.metricSource.spec"
            ".threshold_seconds: sli 'latency' needs threshold_seconds",
        ),
        (
            ("kind: Service", "kind: AlertPolicy"),
            "document 1 (AlertPolicy 'rag'): kind: AlertPolicy: not read; `evaluator slo rules`",
        ),
        (
            ("apiVersion: openslo/v1\nkind: Service", "apiVersion: openslo/v2alpha\nkind: Service"),
            "document 1 (Service 'rag'): apiVersion: 'openslo/v2alpha': only openslo/v1",
        ),
        (
            ("indicatorRef: answer-correct", "indicatorRef: answer-wrong"),
            "document 3 (SLO 'answers'): spec.indicatorRef: no kind: SLI document named",
        ),
        (
            ("name: fast\nspec:", "name: answers\nspec:"),
            "document 4 (SLO 'answers'): metadata.name: another SLO is called 'answers'",
        ),
        (
            ("metadata:\n  name: rag", "metadata:\n  name: rag\n  owner: me"),
            "document 1 (Service 'rag'): metadata.owner: not read by evaluator",
        ),
    ],
)
def test_a_malformed_openslo_file_is_refused_naming_the_field(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    """Whatever evaluator does not read is an error naming the document and the field."""
    assert change[0] in OPENSLO, change[0]
    with pytest.raises(ConfigError) as raised:
        _with_openslo(tmp_path, OPENSLO.replace(*change, 1))
    assert f"{tmp_path / 'slos.yaml'}: {message}" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x [1, 2]\nb: *x\n", "anchors and aliases are not accepted"),
        ("[" * 5000 + "]" * 5000, "invalid YAML"),
        ("a: [1\n", "invalid YAML"),
        ("!!python/object:os.system {}\n", "invalid YAML"),
        ("- 1\n", "document 1: expected a mapping"),
    ],
)
def test_what_is_not_a_plain_yaml_mapping_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    """Aliases (the billion laughs), nesting, syntax, Python tags: a clear refusal."""
    with pytest.raises(ConfigError, match=message):
        _with_openslo(tmp_path, text)


def test_check_lists_each_slo_and_how_its_alerts_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evaluator check` says what each SLO counts, its alerts, and every adaptation."""
    path = tmp_path / "evaluator.toml"
    path.write_text(JOBS + SLO.replace("0.99", "0.7").replace("28d", "1d"), "utf-8")
    assert 0 == main(["check", "--config", str(path)])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "slo answers" in ln]
    assert [
        "ok    slo answers: answer_correct, objective 0.7 over 1d of ref/rag_cases; alerts: page "
        "2m/2m at 2.167x, page 12m/2m at 1.435x, ticket 48m/4m at 1.174x, ticket 2h24m/12m at 1x",
        "note  slo answers: the workbook's windows are for 30 days: scaled by 1d / 30d, to whole "
        "minutes",
    ] == lines[:2]
    assert "14.4 -> 2.167, 6 -> 1.435, 3 -> 1.174, 1 -> 1" in lines[2]
    assert (
        "note  slo answers: page 2m/2m: short window 1m widened to 2m: two runs of the job "
        "(every 1m)"
    ) == lines[3]
