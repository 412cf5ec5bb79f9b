"""Settings: TOML file, EVALUATOR_ environment and flag overrides, strict validation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.config import (
    CallableTargetConfig,
    HttpTargetConfig,
    JobConfig,
    Settings,
    load_settings,
)
from evaluator.errors import ConfigError

TOML = """\
k = 3
concurrency = 2

[scoring]
refusal_phrases = ["无法回答"]

[[targets]]
url = "http://rag:8000/query"

[[targets]]
name = "in-process"
callable = "app.rag:answer"

[[jobs]]
target = "rag:8000"
dataset = "evals/refund.jsonl"
interval_seconds = 300

[[jobs]]
name = "nightly"
target = "in-process"
dataset = "evals/all.jsonl"
cron = "0 3 * * *"
k = 10
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory, so no real config/evaluator.toml is picked up."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(folder: Path, text: str, name: str = "evaluator.toml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _error(*args: object, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(*args, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    return message


class TestSources:
    """Values come from defaults, the TOML file, the environment and overrides, in that order."""

    def test_defaults(self, workdir: Path) -> None:
        """Without a file, the documented defaults apply."""
        settings = load_settings()
        assert (5, 4, 0.1, (), ()) == (
            settings.k,
            settings.concurrency,
            settings.error_ratio_limit,
            settings.targets,
            settings.jobs,
        )

    def test_toml_file(self, workdir: Path) -> None:
        """A TOML file sets top-level values, scoring, targets and jobs."""
        settings = load_settings(_write(workdir, TOML))
        assert (3, 2, ("无法回答",)) == (
            settings.k,
            settings.concurrency,
            settings.scoring.refusal_phrases,
        )
        assert ["rag:8000", "in-process"] == [t.label for t in settings.targets]
        assert ["rag:8000/refund", "nightly"] == [j.key for j in settings.jobs]
        in_process = settings.target("in-process")
        assert isinstance(in_process, CallableTargetConfig)
        assert ("app.rag:answer", 10) == (in_process.callable, settings.jobs[1].k)

    def test_default_path(self, workdir: Path) -> None:
        """config/evaluator.toml in the working directory is read when no path is given."""
        _write(workdir / "config", "k = 7\n")
        assert 7 == load_settings().k

    def test_env_overrides_file(self, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """EVALUATOR_ variables beat the file, nested ones with ``__``."""
        monkeypatch.setenv("EVALUATOR_K", "9")
        monkeypatch.setenv("EVALUATOR_SCORING__REFUSAL_PHRASES", '["不知道"]')
        settings = load_settings(_write(workdir, TOML))
        assert (9, 2, ("不知道",)) == (
            settings.k,
            settings.concurrency,
            settings.scoring.refusal_phrases,
        )

    def test_overrides_beat_env(self, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Command-line overrides have the highest priority."""
        monkeypatch.setenv("EVALUATOR_K", "9")
        monkeypatch.setenv("EVALUATOR_CONCURRENCY", "6")
        settings = load_settings(_write(workdir, TOML), {"k": 11})
        assert (11, 6) == (settings.k, settings.concurrency)

    def test_env_without_file(self, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The environment alone is enough, for Settings and load_settings alike."""
        monkeypatch.setenv("EVALUATOR_LOG_LEVEL", "debug")
        assert ("debug", "debug") == (Settings().log_level, load_settings().log_level)

    def test_single_target_from_overrides(self, workdir: Path) -> None:
        """A target and job passed as overrides need no file (``--target-url``, ``--dataset``)."""
        settings = load_settings(
            None,
            {
                "targets": [{"url": "https://rag.example.com:8443/ask"}],
                "jobs": [{"target": "rag.example.com:8443", "dataset": "evals/x.jsonl"}],
            },
        )
        job = settings.job()
        assert ("rag.example.com:8443", "x", Path("evals/x.jsonl")) == (
            job.target,
            job.dataset_name,
            job.dataset,
        )


class TestUnknownKeys:
    """Unknown keys stop the load with a message naming the field, wherever they come from."""

    @pytest.mark.parametrize(
        ("text", "field"),
        [
            ("kk = 4\n", "kk"),
            ("[scoring]\nrefusal_phrase = ['x']\n", "scoring.refusal_phrase"),
            ("[[targets]]\nurll = 'http://a:1'\n", "targets.0.urll"),
            (
                "[[targets]]\nurl = 'http://a:1'\n[[jobs]]\ntarget = 'a:1'\ndataset = 'x.jsonl'\n"
                "intervall = 5\n",
                "jobs.0.intervall",
            ),
        ],
    )
    def test_in_file(self, workdir: Path, text: str, field: str) -> None:
        """A typo in the TOML file names the key in the file, not an environment variable,
        and suggests the closest known key."""
        path = _write(workdir, text)
        message = _error(path)
        assert message.startswith(f"invalid configuration: {path}: {field}: unknown key")
        assert "EVALUATOR_" not in message
        assert "did you mean" in message

    def test_did_you_mean_names_the_right_key(self, workdir: Path) -> None:
        """The suggestion comes from the table the key is in (a target's fields here)."""
        message = _error(_write(workdir, "[[targets]]\nurl = 'http://a:1'\ntimeout_secnds = 3\n"))
        assert f"{workdir / 'evaluator.toml'}: targets.0.timeout_secnds: unknown key" in message
        assert '(did you mean "timeout_seconds"?)' in message

    def test_a_flag_is_named_as_the_flag(self, workdir: Path) -> None:
        """--k 0 is reported against --k, not the config file or EVALUATOR_K."""
        message = _error(None, {"k": 0}, {"k": "--k"})
        assert "invalid configuration: --k: Input should be greater than or equal to 1" == message

    def test_nested_env(self, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """An unknown nested environment key is rejected, naming the variable."""
        monkeypatch.setenv("EVALUATOR_SCORING__BOGUS", "1")
        expected = "environment variable EVALUATOR_SCORING__BOGUS (scoring.bogus): unknown key"
        assert expected in _error()

    def test_overrides(self, workdir: Path) -> None:
        """An unknown override key is rejected too."""
        assert "kk: unknown key" in _error(None, {"kk": 1})


class TestInvalidValues:
    """Invalid values and files are ConfigErrors with a one-line message."""

    def test_invalid_toml_names_file(self, workdir: Path) -> None:
        """A syntax error names the file and says it is invalid TOML."""
        path = _write(workdir, "k = \n")
        assert _error(path).startswith(f"{path}: invalid TOML: ")

    def test_integer_beyond_digit_limit(self, workdir: Path) -> None:
        """An integer of 5,000 digits (beyond Python's conversion limit, a ValueError that is
        no TOMLDecodeError) is invalid TOML naming the file, not an internal error."""
        path = _write(workdir, "k = " + "9" * 5000 + "\n")
        assert _error(path).startswith(f"{path}: invalid TOML: ")

    def test_missing_file(self, workdir: Path) -> None:
        """An explicit path that does not exist is an error (not silently ignored)."""
        assert "does not exist" in _error(workdir / "nope.toml")

    def test_folder_is_not_a_file(self, workdir: Path) -> None:
        """A folder given as the config file is an error."""
        assert "is not a file" in _error(workdir)

    def test_out_of_range_in_file(self, workdir: Path) -> None:
        """k must be at least 1."""
        assert f"{workdir / 'evaluator.toml'}: k: " in _error(_write(workdir, "k = 0\n"))

    def test_bad_env_value_hides_input(
        self, workdir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bad environment value names its variable and never echoes the value."""
        monkeypatch.setenv("EVALUATOR_CONCURRENCY", "s3cr3t-value")
        message = _error()
        assert message.startswith(
            "invalid configuration: environment variable EVALUATOR_CONCURRENCY (concurrency): "
        )
        assert "s3cr3t-value" not in message

    def test_target_needs_one_kind(self, workdir: Path) -> None:
        """A target with neither url nor callable is rejected, naming the target."""
        message = _error(_write(workdir, "[[targets]]\nname = 'x'\n"))
        assert "targets.0" in message
        assert "set exactly one of 'url' or 'callable'" in message

    def test_shard_index_below_count(self, workdir: Path) -> None:
        """shard_index must be below shard_count."""
        assert "shard_index 2 must be below shard_count 2" in _error(
            None, {"shard_index": 2, "shard_count": 2}
        )


class TestJobReferences:
    """Jobs must name configured targets; names must be unique."""

    def test_unknown_target(self, workdir: Path) -> None:
        """A job naming no configured target is rejected, listing the known ones."""
        text = (
            "[[targets]]\nurl = 'http://rag:8000'\n"
            "[[jobs]]\ntarget = 'rag:9000'\ndataset = 'x.jsonl'\n"
        )
        message = _error(_write(workdir, text))
        assert "jobs.0.target: no target named 'rag:9000' (known: ['rag:8000'])" in message

    def test_duplicate_targets(self, workdir: Path) -> None:
        """Two targets with the same label are rejected."""
        text = "[[targets]]\nurl = 'http://rag:8000/a'\n[[targets]]\nurl = 'http://rag:8000/b'\n"
        assert "duplicate target name(s) ['rag:8000']" in _error(_write(workdir, text))

    def test_duplicate_jobs(self, workdir: Path) -> None:
        """Two jobs with the same key are rejected."""
        job = "[[jobs]]\ntarget = 'rag:8000'\ndataset = 'evals/x.jsonl'\n"
        text = "[[targets]]\nurl = 'http://rag:8000'\n" + job + job
        assert "duplicate job(s) ['rag:8000/x']" in _error(_write(workdir, text))


class TestJobs:
    """JobConfig defaults and Settings.job lookup."""

    def test_job_lookup(self, workdir: Path) -> None:
        """job() gives the first job, job(name) the named one, an unknown name a ConfigError."""
        settings = load_settings(_write(workdir, TOML))
        assert ("rag:8000/refund", "nightly") == (settings.job().key, settings.job("nightly").key)
        with pytest.raises(ConfigError, match=r"no job named 'x'; known: \['nightly'"):
            settings.job("x")

    def test_no_job(self, workdir: Path) -> None:
        """Without jobs, job() explains how to configure one."""
        with pytest.raises(ConfigError, match="no job configured"):
            load_settings().job()

    def test_job_defaults(self) -> None:
        """The dataset label defaults to the file stem and the key to target/dataset."""
        job = JobConfig(target="rag:8000", dataset=Path("evals/refund.jsonl"))
        labelled = JobConfig(target="t", dataset=Path("x.jsonl"), dataset_label="prod", name="n")
        assert ("refund", "rag:8000/refund", None, True) == (
            job.dataset_name,
            job.key,
            job.k,
            job.run_at_start,
        )
        assert ("prod", "n") == (labelled.dataset_name, labelled.key)

    def test_one_schedule(self, workdir: Path) -> None:
        """interval_seconds and cron exclude each other."""
        text = (
            "[[targets]]\nurl = 'http://rag:8000'\n[[jobs]]\ntarget = 'rag:8000'\n"
            "dataset = 'x.jsonl'\ninterval_seconds = 60\ncron = '* * * * *'\n"
        )
        assert "set at most one of 'interval_seconds' or 'cron'" in _error(_write(workdir, text))

    def test_frozen(self, workdir: Path) -> None:
        """Settings cannot be changed after loading."""
        settings = load_settings()
        with pytest.raises(ValueError, match="frozen"):
            settings.k = 3  # type: ignore[misc]


@pytest.mark.e2e
class TestImportCost:
    """Loading a configuration stays cheap: ``evaluator validate`` and every command pay it."""

    def test_loading_a_config_does_not_import_the_http_stack(self, workdir: Path) -> None:
        """A config with an HTTP target (whose label is derived from the URL) loads, and every
        run option is built, without httpx, aiohttp, tenacity, the runner or the HTTP target."""
        path = _write(workdir, TOML)
        code = (
            "import sys\n"
            "from evaluator.config import load_settings\n"
            f"settings = load_settings({str(path)!r})\n"
            "assert [t.label for t in settings.targets] == ['rag:8000', 'in-process']\n"
            "[settings.run_options(job) for job in settings.jobs]\n"
            "heavy = ('httpx', 'httpx_aiohttp', 'aiohttp', 'tenacity', 'numpy',\n"
            "         'evaluator.run.runner', 'evaluator.targets.http', 'evaluator.report')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert 0 == done.returncode, done.stderr
        assert "[]" == done.stdout.strip()


class TestPathsInAFile:
    """Paths written in a config file are relative to that file, not to the working folder."""

    CONFIG = (
        'reports_dir = "out"\ngates_file = "gates.toml"\n'
        '[[targets]]\nurl = "http://h/rag"\n[targets.tls]\nca_bundle = "ca.pem"\n'
        '[[jobs]]\ntarget = "h:80"\ndataset = "golden.jsonl"\nbaseline = "/abs/base.json"\n'
    )

    def test_relative_paths_resolve_against_the_file(self, workdir: Path) -> None:
        """Relative paths of a configuration file resolve against its folder, absolute ones
        stay."""
        path = _write(workdir / "conf", self.CONFIG)
        settings = load_settings(path)
        job, target = settings.jobs[0], settings.targets[0]
        assert workdir / "conf" / "golden.jsonl" == workdir / job.dataset
        assert Path("/abs/base.json") == job.baseline
        assert workdir / "conf" / "out" == settings.reports_dir
        assert workdir / "conf" / "gates.toml" == settings.gates_file
        assert isinstance(target, HttpTargetConfig)
        assert workdir / "conf" / "ca.pem" == target.tls.ca_bundle

    def test_from_another_folder(self, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Run from elsewhere with an absolute --config: the golden set is still found."""
        path = _write(workdir / "conf", self.CONFIG)
        elsewhere = workdir / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        assert workdir / "conf" / "golden.jsonl" == load_settings(path).jobs[0].dataset

    def test_environment_and_flags_stay_relative_to_the_working_folder(
        self, workdir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Typed on the command line, a path means what the shell there means."""
        path = _write(workdir / "conf", self.CONFIG)
        monkeypatch.setenv("EVALUATOR_REPORTS_DIR", "here")
        settings = load_settings(path, {"gates_file": "mine.toml"})
        assert (Path("here"), Path("mine.toml")) == (settings.reports_dir, settings.gates_file)

    def test_the_shipped_config_finds_its_golden_set(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """config/evaluator.toml names ../evals/rag_cases.jsonl, relative to itself."""
        root = Path(__file__).resolve().parents[1]
        monkeypatch.chdir(root / "docs")  # anywhere but the repository root
        settings = load_settings(root / "config" / "evaluator.toml")
        assert settings.jobs[0].dataset.is_file()
        assert root / "reports" == settings.reports_dir
