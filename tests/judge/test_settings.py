"""The [judge] section: a bad value stops the process at start naming the field; a job's
override is laid over the top-level section; paths are relative to the config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.config import load_settings
from evaluator.errors import ConfigError

_BASE = """
[[targets]]
name = "t"
url = "http://127.0.0.1:1/rag"
[[jobs]]
target = "t"
dataset = "golden.jsonl"
"""


def _load(tmp: Path, text: str) -> object:
    path = tmp / "evaluator.toml"
    path.write_text(text)
    return load_settings(str(path))


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ('[judge]\nurl = "ftp://x"\nmodel = "m"\n', "judge.url"),
        (
            '[judge]\nurl = "http://x/v1"\nmodel = "m"\ntimeout_seconds = 0\n',
            "judge.timeout_seconds",
        ),
        ('[judge]\nurl = "http://x/v1"\nmodel = "m"\nvibes = 1\n', "judge.vibes"),
        ('[judge]\nurl = "http://x/v1"\n', "judge.model"),
    ],
)
@pytest.mark.e2e
def test_a_bad_judge_names_the_field(tmp_path: Path, section: str, field: str) -> None:
    """A bad ``[judge]`` setting stops the configuration naming the field."""
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        _load(tmp_path, section + _BASE)


def test_a_jobs_override_is_checked_and_named(tmp_path: Path) -> None:
    """A job's judge override is validated and a bad one named by its job."""
    text = '[judge]\nurl = "http://x/v1"\nmodel = "m"\n' + _BASE + "judge = {concurrency = 0}\n"
    with pytest.raises(ConfigError, match=r"jobs\.0\.judge\.concurrency"):
        _load(tmp_path, text)


def test_a_jobs_override_is_laid_over_the_section(tmp_path: Path) -> None:
    """A job's judge override replaces only the keys it sets, over the top-level section."""
    text = (
        '[judge]\nurl = "http://x/v1"\nmodel = "m"\nmax_calls = 10\n'
        'drift_labels = "labels/golden.jsonl"\n' + _BASE + 'judge = {model = "big"}\n'
    )
    settings = _load(tmp_path, text)
    judge = settings.judge_for(settings.jobs[0])  # type: ignore[attr-defined]
    assert (judge.model, judge.max_calls, judge.url) == ("big", 10, "http://x/v1")
    assert judge.drift_labels == tmp_path / "labels" / "golden.jsonl"
