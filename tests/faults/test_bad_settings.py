"""Every invalid setting stops ``evaluator serve`` at start, exit 1, naming the field, and
never as an "internal error" (or a daemon that starts healthy and fails every run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EVALUATOR = str(Path(sys.executable).with_name("evaluator"))
URL = "http://127.0.0.1:9/rag"

#: (id, TOML for the target, for the job, top-level, environment, what stderr must name)
BAD: list[tuple[str, str, str, str, dict[str, str], str]] = [
    ("port-out-of-range", 'url = "http://127.0.0.1:99999/rag"', "", "", {}, "targets.0"),
    ("port-not-a-number", 'url = "http://127.0.0.1:80x/rag"', "", "", {}, "not a valid URL"),
    ("broken-ipv6", 'url = "http://[::1/rag"', "", "", {}, "Invalid IPv6 URL"),
    ("no-host", 'url = "http:///rag"', "", "", {}, "has no host"),
    ("infinite-timeout", "timeout_seconds = inf", "", "", {}, "timeout_seconds"),
    ("huge-interval", "", "interval_seconds = 1e300", "", {}, "interval_seconds"),
    ("nan-interval", "", "interval_seconds = nan", "", {}, "interval_seconds"),
    ("huge-jitter", "", "jitter_seconds = 1e30", "", {}, "jitter_seconds"),
    ("tiny-rate", "requests_per_second = 1e-9", "", "", {}, "requests_per_second"),
    ("unsorted-buckets", "", "", "histogram_buckets = [1.0, 0.5]", {}, "histogram_buckets"),
    ("empty-buckets", "", "", "histogram_buckets = []", {}, "histogram_buckets"),
    ("nan-bucket", "", "", "histogram_buckets = [0.1, nan]", {}, "histogram_buckets"),
    ("cron-never-fires", "", 'cron = "0 0 30 2 *"', "", {}, "never fires"),
    ("k-beyond-ranking", "max_ranked_ids = 3", "k = 5", "", {}, "jobs.0.k"),
    ("infinite-grace", "", "", "shutdown_grace_seconds = inf", {}, "shutdown_grace_seconds"),
    ("bad-env-json", "", "", "", {"EVALUATOR_TARGETS": "[{bad"}, "EVALUATOR_TARGETS"),
    # the two kinds of target: an HTTP key on a callable, both endpoints, a misspelt one
    ("http-key-on-callable", 'callable = "json:dumps"\nmax_connections = 3', "", "", {},
     "targets.0.max_connections: only for a 'url' target"),
    ("url-and-callable", f'url = "{URL}"\ncallable = "json:dumps"', "", "", {},
     "targets.0: set exactly one of 'url' or 'callable'"),
    ("callable-misspelt", 'callabel = "json:dumps"', "", "", {},
     'targets.0.callabel: unknown key (did you mean "callable"?)'),
    ("env-http-key-on-callable", "", "", "", {"EVALUATOR_TARGETS": json.dumps(
        [{"name": "t", "callable": "json:dumps", "tls": {"verify": False}}])},
     "environment variable EVALUATOR_TARGETS (targets.0.tls): only for a 'url' target"),
    # headers that cannot be sent: refused at start, not a retried `connect` on every case
    ("header-value-crlf", 'request = { headers = { X-Trace = "a\\r\\nInjected: 1" } }', "", "",
     {}, "request.headers.X-Trace"),
    ("header-value-env-lf", 'request = { headers = { Authorization = "Bearer ${TOKEN}" } }', "",
     "", {"TOKEN": "abc\n"}, "request.headers.Authorization"),
    ("header-value-control", 'request = { headers = { X-A = "a\\u0007b" } }', "", "", {},
     "request.headers.X-A"),
    ("header-name-space", 'request = { headers = { "X Trace" = "1" } }', "", "", {},
     "request.headers.X Trace"),
]  # fmt: skip


def _write(tmp_path: Path, target: str, job: str, top: str) -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "c", "question": "q", "relevant_ids": ["d"]}) + "\n")
    if not any(endpoint in target for endpoint in ("url =", "callable =", "callabel =")):
        target = f'url = "{URL}"\n{target}'
    config = tmp_path / "evaluator.toml"
    config.write_text(
        f'{top}\nreports_dir = "{tmp_path / "reports"}"\n'
        f'[[targets]]\nname = "t"\n{target}\n'
        f'[[jobs]]\ntarget = "t"\ndataset = "{golden}"\n{job}\n',
        "utf-8",
    )
    return config


@pytest.mark.parametrize(
    ("target", "job", "top", "env", "named"),
    [case[1:] for case in BAD],
    ids=[case[0] for case in BAD],
)
@pytest.mark.parametrize("command", ["serve", "check"])
def test_bad_setting_stops_serve_naming_the_field(
    tmp_path: Path, target: str, job: str, top: str, env: dict[str, str], named: str,
    command: str,
) -> None:  # fmt: skip
    """A bad setting, in the file or the environment, stops the command at start with one
    message naming the field."""
    if command == "check" and not target.startswith("request = "):
        pytest.skip("check is covered by tests/commands for the other settings")
    config = _write(tmp_path, target, job, top)
    extra = ["--listen", "127.0.0.1:0"] if command == "serve" else []
    base = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    proc = subprocess.run(
        [EVALUATOR, command, "--config", str(config), *extra],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=30,
        check=False,
    )
    assert 1 == proc.returncode, proc.stdout[-2000:]
    if command == "check":  # check lists every problem on stdout, then fails
        assert named in proc.stdout and "internal error" not in proc.stdout + proc.stderr
        return
    # logs share stderr (JSON lines: a target's settings are checked as the daemon builds
    # it, after logging is up); besides them, one line names the field
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("{")]
    assert 1 == len(lines), proc.stderr
    assert lines[0].startswith("evaluator: error: "), lines[0]
    assert "internal error" not in lines[0] and named in lines[0]
    assert "daemon_started" not in proc.stdout


def _forged(tmp_path: Path, kind: str) -> Path:
    """A baseline report that no writer produces: 10**400 as a number, or 100,000 levels of
    nested arrays."""
    path = tmp_path / f"{kind}.json"
    text = (Path(__file__).parents[2] / "docs/examples/baseline.json").read_text("utf-8")
    if kind == "huge-number":
        text = text.replace(
            '"duration_seconds": ', '"duration_seconds": 1' + "0" * 400 + ', "x": ', 1
        )
    else:
        text = '{"schema_version": 1, "run_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize("kind", ["huge-number", "deep-nesting"])
def test_forged_baseline_stops_serve_and_gate_naming_the_file(tmp_path: Path, kind: str) -> None:
    """A forged baseline report stops ``serve`` and ``gate`` at start naming the file."""
    baseline = _forged(tmp_path, kind)
    config = _write(tmp_path, "", f'baseline = "{baseline}"', "")
    base = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    candidate = Path(__file__).parents[2] / "docs/examples/candidate.json"
    commands = [
        ["serve", "--config", str(config), "--listen", "127.0.0.1:0"],
        ["gate", "--baseline", str(baseline), "--candidate", str(candidate)],
    ]
    for command in commands:
        proc = subprocess.run(
            [EVALUATOR, *command], capture_output=True, text=True, env=base, timeout=30,
            check=False,
        )  # fmt: skip
        assert 1 == proc.returncode, proc.stderr
        line = proc.stderr.strip().splitlines()[-1]
        assert "internal error" not in line and str(baseline) in line, line


@pytest.mark.parametrize("command", ["run", "serve", "probe", "gate"])
@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/rag", "http://[::1/rag"])
def test_bad_target_url_flag_names_the_flag(tmp_path: Path, command: str, url: str) -> None:
    """A bad ``--target-url`` stops the command naming the flag."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "c", "question": "q", "relevant_ids": ["d"]}) + "\n")
    args = [command, "--target-url", url]
    args += ["--question", "q"] if command == "probe" else ["--dataset", str(golden)]
    if command == "gate":
        args += ["--baseline", str(Path(__file__).parents[2] / "docs/examples/baseline.json")]
    base = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATOR_")}
    proc = subprocess.run(
        [EVALUATOR, *args], capture_output=True, text=True, env=base, cwd=tmp_path, timeout=30,
        check=False,
    )  # fmt: skip
    assert 1 == proc.returncode
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("evaluator: error: ") and "--target-url" in line, line
