"""The command line's contract: exit codes and one-line errors without tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# every test here starts a server or a subprocess: not in `make fast`
pytestmark = pytest.mark.e2e

EXE = str(Path(sys.executable).with_name("evaluator"))


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def _assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert 1 == result.returncode, result
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines), result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


class TestExitCodes:
    def test_unknown_flag_exits_1_not_2(self, tmp_path: Path) -> None:
        """argparse's usage error (2 by default) becomes 1: 2 means a failed gate only."""
        _assert_one_line_error(_run("run", "--no-such-flag", cwd=tmp_path), "--no-such-flag")

    def test_unknown_command(self, tmp_path: Path) -> None:
        """An unknown subcommand is a usage error with exit 1."""
        _assert_one_line_error(_run("frobnicate", cwd=tmp_path), "frobnicate")

    def test_bad_flag_value(self, tmp_path: Path) -> None:
        """A non-integer --k names the flag."""
        _assert_one_line_error(_run("run", "--k", "many", cwd=tmp_path), "--k")

    def test_missing_dataset_file(self, tmp_path: Path) -> None:
        """An unreadable golden set names the file."""
        result = _run(
            "run", "--dataset", "nope.jsonl", "--target-url", "http://127.0.0.1:9/rag",
            cwd=tmp_path,
        )  # fmt: skip
        _assert_one_line_error(result, "nope.jsonl")

    def test_target_url_without_dataset(self, tmp_path: Path) -> None:
        """--target-url alone says what is missing."""
        _assert_one_line_error(_run("run", "--target-url", "http://x/", cwd=tmp_path), "--dataset")

    def test_missing_config_file(self, tmp_path: Path) -> None:
        """An explicit --config that does not exist names the path."""
        _assert_one_line_error(
            _run("run", "--config", "missing.toml", cwd=tmp_path), "missing.toml"
        )

    def test_config_typo_names_field(self, tmp_path: Path) -> None:
        """An unknown key in the config file stops the command, naming the key."""
        (tmp_path / "c.toml").write_text("concurency = 3\n", "utf-8")
        _assert_one_line_error(_run("run", "--config", "c.toml", cwd=tmp_path), "concurency")

    def test_invalid_toml_names_file(self, tmp_path: Path) -> None:
        """Broken TOML names the file and the position."""
        (tmp_path / "c.toml").write_text("k = = 3\n", "utf-8")
        _assert_one_line_error(_run("run", "--config", "c.toml", cwd=tmp_path), "c.toml", "line 1")

    def test_env_override_is_validated(self, tmp_path: Path) -> None:
        """A bad EVALUATOR_ variable is reported with the variable's name."""
        env_result = subprocess.run(
            [EXE, "run"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
            env={"EVALUATOR_K": "0", "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        _assert_one_line_error(env_result, "EVALUATOR_K")

    def test_misspelt_env_variable(self, tmp_path: Path) -> None:
        """An EVALUATOR_ variable naming no setting is an error, with a suggestion."""
        result = subprocess.run(
            [EXE, "run"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
            env={"EVALUATOR_CONCURENCY": "3", "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        _assert_one_line_error(result, "EVALUATOR_CONCURENCY", "EVALUATOR_CONCURRENCY")

    def test_usage_error_has_one_prefix(self, tmp_path: Path) -> None:
        """Not `evaluator: error: evaluator: ...`: the program is named once."""
        result = _run("run", "--no-such-flag", cwd=tmp_path)
        assert result.stderr.startswith("evaluator: error: unrecognized arguments: --no-such-flag")
        assert "error: evaluator" not in result.stderr

    def test_k_zero_names_the_flag(self, tmp_path: Path) -> None:
        """--k 0 is the flag's mistake, not the config file's or EVALUATOR_K's."""
        result = _run(
            "run", "--k", "0", "--dataset", "x.jsonl", "--target-url", "http://127.0.0.1:9/",
            cwd=tmp_path,
        )  # fmt: skip
        _assert_one_line_error(result, "--k: Input should be greater than or equal to 1")
        assert "EVALUATOR_K" not in result.stderr

    def test_dataset_with_a_target_but_no_job_says_what_is_missing(self, tmp_path: Path) -> None:
        """A config with [[targets]] and no [[jobs]] plus --dataset: the job is missing."""
        (tmp_path / "c.toml").write_text('[[targets]]\nname = "r"\nurl = "http://h/rag"\n')
        result = _run("run", "--config", "c.toml", "--dataset", "x.jsonl", cwd=tmp_path)
        _assert_one_line_error(result, "c.toml has target(s) 'r' but no [[jobs]]", 'target = "r"')

    def test_no_job(self, tmp_path: Path) -> None:
        """Without a config or flags, the error says how to name a job."""
        _assert_one_line_error(_run("run", cwd=tmp_path), "--dataset")

    def test_no_command_prints_help(self, tmp_path: Path) -> None:
        """Bare `evaluator` shows the commands and exits 1."""
        result = _run(cwd=tmp_path)
        assert 1 == result.returncode
        assert "validate" in result.stderr


class TestValidate:
    def test_valid_file(self, tmp_path: Path) -> None:
        """A valid golden set exits 0."""
        root = Path(__file__).resolve().parents[1]
        result = _run("validate", str(root / "evals" / "example.jsonl"), cwd=tmp_path)
        assert 0 == result.returncode, result.stderr

    def test_invalid_file_lists_every_problem(self, tmp_path: Path) -> None:
        """Every problem is printed as file:line and the exit code is 1."""
        bad = tmp_path / "bad.jsonl"
        bad.write_text(
            '{"id": "a", "question": "q", "relevant_ids": ["d"]}\n'
            "{oops\n"
            '{"id": "a", "question": "q", "relevant_ids": ["d"]}\n',
            "utf-8",
        )
        result = _run("validate", str(bad), cwd=tmp_path)
        assert 1 == result.returncode
        assert f"{bad}:2:" in result.stderr
        assert f"{bad}:3:" in result.stderr

    @pytest.mark.parametrize("content", [b"", b"\n\n"])
    def test_empty_file(self, tmp_path: Path, content: bytes) -> None:
        """An empty golden set is invalid."""
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(content)
        result = _run("validate", str(empty), cwd=tmp_path)
        assert 1 == result.returncode
        assert str(empty) in result.stderr
