"""`evaluator check`, `evaluator completion`, `--debug` before the command and --help's
examples and exit codes, through the real entry point (in process)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evaluator.cli import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "evals" / "rag_cases.jsonl"


def _config(tmp_path: Path, *, dataset: Path, job_extra: str = "") -> Path:
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f"""
[[targets]]
name = "rag"
url = "http://127.0.0.1:9/rag"

[[jobs]]
target = "rag"
dataset = "{dataset}"
{job_extra}
""",
        encoding="utf-8",
    )
    return config


class TestCheck:
    """A configuration checked without sending anything to any target."""

    def test_a_good_configuration_passes(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A valid configuration whose target is on the discard port: exit 0, every check listed ok,
        and nothing sent."""
        # port 9 (discard) on loopback: nothing listens there, so any request would fail
        config = _config(tmp_path, dataset=GOLDEN)
        assert 0 == main(["check", "--config", str(config)])
        out = capsys.readouterr().out
        assert "ok    target rag: http://127.0.0.1:9/rag" in out
        assert "golden set:" in out and "138 cases" in out
        assert out.rstrip().endswith("configuration ok; nothing was sent to any target")

    def test_every_problem_is_listed_and_exits_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A bad golden set and a bad baseline are both reported (one FAIL line each, naming the
        file), not only the first: exit 1."""
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"id": "a", "question": "q"}\n{"nope": 1}\n', encoding="utf-8")
        baseline = tmp_path / "baseline.json"
        baseline.write_text('{"schema_version": 1}', encoding="utf-8")
        config = _config(tmp_path, dataset=bad, job_extra=f'baseline = "{baseline}"')
        assert 1 == main(["check", "--config", str(config)])
        out = capsys.readouterr().out
        fails = [line for line in out.splitlines() if line.startswith("FAIL")]
        assert len(fails) == 2, out
        assert "golden set:" in fails[0] and "bad.jsonl:1" in fails[0]
        assert "baseline:" in fails[1] and "baseline.json" in fails[1]
        assert "2 problem(s); nothing was sent to any target" in out

    def test_a_bad_mapping_stops_at_load_naming_the_field(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A response expression that does not parse stops `check` at load, naming the target's
        field."""
        config = tmp_path / "evaluator.toml"
        config.write_text(
            '[[targets]]\nname = "rag"\nurl = "http://127.0.0.1:9/rag"\n'
            '[targets.response]\nids = "ids"\nanswer = "a.["\n'
            f'[[jobs]]\ntarget = "rag"\ndataset = "{GOLDEN}"\n',
            encoding="utf-8",
        )
        assert 1 == main(["check", "--config", str(config)])
        assert "targets.0.response.answer: invalid JMESPath" in capsys.readouterr().err


@pytest.mark.e2e
class TestCompletion:
    def test_bash_script_completes_commands_and_flags(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The generated bash completion names the commands and their flags, and bash loads it."""
        assert 0 == main(["completion", "bash"])
        script = capsys.readouterr().out
        for word in ("run", "serve", "gate", "check", "--baseline", "--target-url"):
            assert word in script
        # the script is valid bash
        done = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert done.returncode == 0, done.stderr


class TestHelp:
    def test_debug_is_accepted_before_the_command(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`--debug` is a global flag: accepted before the command."""
        assert 0 == main(["--debug", "validate", str(GOLDEN)])
        assert "1 file(s) valid" in capsys.readouterr().out

    @pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["gate", "--help"]])
    def test_help_shows_examples_and_exit_codes(
        self, argv: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every help text shows examples and the exit codes, and exits 0."""
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert "examples:" in out
        assert "130  interrupted (Ctrl-C)" in out
        assert "2    the gate failed" in out
