"""Small stand-ins for GitHub Actions and GitLab CI that run a recipe's shell steps as those
systems do: the same shell invocation, the same step order and conditions, the same
environment variables the recipes read.

What is emulated rather than real: checkout (a fresh copy of the repository), setup-python,
``pip install`` and ``apt-get`` (stubs: the test's venv already has the project, and tests do
not reach the network), the artifact actions, ``gh run list``/``gh run download`` (a stub
reading the artifacts this emulator stored) and GitLab's job-artifacts API (a loopback HTTP
server that checks the job token). Everything else in a step runs for real.

The shells, from the CI systems' documentation and source:

- GitHub Actions, Linux: a ``run:`` step without ``shell`` runs ``bash -e {0}``; with
  ``shell: bash`` it runs ``bash --noprofile --norc -eo pipefail {0}``; ``shell: sh`` runs
  ``sh -e {0}``.
- GitLab Runner (bash/sh shells): ``before_script`` and ``script`` become one script, each
  line echoed then run, wrapped in the runner's prologue (``shells/bash.go``)::

      trap exit 1 TERM
      if set -o | grep pipefail > /dev/null; then set -o pipefail; fi; set -o errexit
      set +o noclobber
      : | eval '<the lines>'
      exit 0

  fed to ``bash`` when the image has it, else ``sh``.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "GITHUB_SHELLS",
    "GitHubRun",
    "GitLabPipeline",
    "StepResult",
    "artifact_api",
    "make_stubs",
    "run_github_job",
    "run_gitlab_job",
]

#: GitHub's ``shell`` keyword -> the command a step's script file is run with (Linux)
GITHUB_SHELLS: dict[str | None, list[str]] = {
    None: ["bash", "-e"],
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"],
    "sh": ["sh", "-e"],
}

#: the GitLab Runner prologue and epilogue around a job's script (bash and sh shells)
GITLAB_PROLOGUE = (
    "trap exit 1 TERM\n\n"
    "if set -o | grep pipefail > /dev/null; then set -o pipefail; fi; set -o errexit\n"
    "set +o noclobber\n"
)

STEP_TIMEOUT_SECONDS = 120.0


@dataclass
class StepResult:
    name: str
    status: str  # "success", "failure", "skipped"
    exit_code: int | None = None
    output: str = ""


@dataclass
class GitHubRun:
    """One workflow run: its event, the steps' results and the run's conclusion."""

    run_id: int
    event: str
    steps: list[StepResult] = field(default_factory=list)

    @property
    def conclusion(self) -> str:
        """The run's conclusion: failure when a step failed."""
        return "failure" if any(s.status == "failure" for s in self.steps) else "success"

    def step(self, name: str) -> StepResult:
        """The result of the step called ``name``."""
        return next(s for s in self.steps if s.name == name)


def make_stubs(folder: Path) -> Path:
    """``pip`` and ``apt-get`` that do nothing and say so, and a ``gh`` over the stored
    artifacts (``GH_STUB_STATE``: one folder per run, ``<run id>/<artifact>/...``, and
    ``successful-main-runs``, newest last)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("pip", "apt-get"):
        script = folder / name
        script.write_text(f'#!/bin/sh\necho "({name} $* skipped: the test venv has the project)"\n')
        script.chmod(0o755)
    gh = folder / "gh"
    gh.write_text(
        """#!/bin/sh
# gh stand-in: `gh run list ... --jq '.[0].databaseId'` and `gh run download ID --name N --dir D`
set -e
[ -n "$GH_TOKEN" ] || { echo "gh: GH_TOKEN is not set" >&2; exit 4; }
state="$GH_STUB_STATE"
case "$1 $2" in
  "run list") tail -n 1 "$state/successful-main-runs" 2>/dev/null || true ;;
  "run download")
    run="$3"; shift 3; name=""; dir="."
    while [ $# -gt 0 ]; do
      case "$1" in --name) name="$2"; shift 2 ;; --dir) dir="$2"; shift 2 ;; *) shift ;; esac
    done
    [ -d "$state/$run/$name" ] || { echo "gh: no artifact $name in run $run" >&2; exit 1; }
    mkdir -p "$dir"; cp -R "$state/$run/$name/." "$dir/" ;;
  *) echo "gh stand-in: unsupported: $*" >&2; exit 2 ;;
esac
"""
    )
    gh.chmod(0o755)
    return folder


def _kill_group(pgid: int) -> None:
    """Stop what a step left running (the recipes start the RAG service in the background)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    for _ in range(50):
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        threading.Event().wait(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _run_script(
    command: list[str], workdir: Path, env: Mapping[str, str], groups: list[int], stdin: Any = None
) -> tuple[int, str]:
    proc = subprocess.Popen(
        command,
        cwd=workdir,
        env=dict(env),
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: background children are found later
    )
    groups.append(proc.pid)
    try:
        out, _ = proc.communicate(timeout=STEP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        return 124, out.decode("utf-8", "replace") + "\n[step timed out]"
    return proc.returncode, out.decode("utf-8", "replace")


# --- GitHub Actions ------------------------------------------------------------------------

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _github_if(condition: str | None, event: str, failed: bool) -> bool:
    """The few expressions the recipes use: github.event_name ==/!= '...', always(),
    success(), failure(), && and ||. Anything else is an error, not a guess."""
    if condition is None:
        return not failed
    text = _EXPRESSION.sub(r"\1", str(condition)).strip()
    uses_status = re.search(r"\b(always|success|failure|cancelled)\(\)", text) is not None
    tokens = re.findall(r"'[^']*'|\w+(?:\.\w+)*\(\)|\w+(?:\.\w+)*|==|!=|&&|\|\||[()!]", text)
    python: list[str] = []
    for token in tokens:
        if token == "github.event_name":
            python.append(repr(event))
        elif token.startswith("'"):
            python.append(repr(token[1:-1]))
        elif token in ("==", "!=", "(", ")"):
            python.append(token)
        elif token == "&&":
            python.append("and")
        elif token == "||":
            python.append("or")
        elif token == "!":
            python.append("not")
        elif token == "always()":
            python.append("True")
        elif token == "success()":
            python.append(repr(not failed))
        elif token == "failure()":
            python.append(repr(failed))
        elif token == "cancelled()":
            python.append("False")
        else:
            raise ValueError(f"unsupported expression in if: {condition!r} ({token})")
    result = bool(eval(" ".join(python), {"__builtins__": {}}))  # tokens checked above
    return result if uses_status else (result and not failed)


def _github_value(value: object, secrets: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in secrets:
            return secrets[name]
        raise ValueError(f"unsupported expression ${{{{ {name} }}}}")

    return _EXPRESSION.sub(substitute, str(value))


def run_github_job(
    workflow: Mapping[str, Any],
    job_name: str,
    *,
    event: str,
    run_id: int,
    workdir: Path,
    base_env: Mapping[str, str],
    state: Path,
    shell_override: str | None = "unset",
) -> GitHubRun:
    """Run one job of a workflow for ``event`` (``push`` on main or ``pull_request``).

    ``shell_override`` replaces the job's default shell (``None`` = GitHub's default), to
    show what a recipe would do without its ``shell: bash``.
    """
    job = workflow["jobs"][job_name]
    defaults = (job.get("defaults") or {}).get("run") or {}
    job_shell = defaults.get("shell") if shell_override == "unset" else shell_override
    secrets = {"github.token": "ghs_stand-in-token"}
    run = GitHubRun(run_id, event)
    summary = workdir.parent / f"step-summary-{run_id}.md"
    summary.touch()
    groups: list[int] = []
    failed = False
    try:
        for index, step in enumerate(job["steps"]):
            name = step.get("name") or step.get("uses") or step.get("run", "").split("\n")[0]
            if not _github_if(step.get("if"), event, failed):
                run.steps.append(StepResult(name, "skipped"))
                continue
            env = dict(base_env)
            env.update(
                {k: _github_value(v, secrets) for k, v in (workflow.get("env") or {}).items()}
            )
            env.update({k: _github_value(v, secrets) for k, v in (job.get("env") or {}).items()})
            env.update({k: _github_value(v, secrets) for k, v in (step.get("env") or {}).items()})
            env.update(
                GITHUB_ACTIONS="true",
                CI="true",
                GITHUB_EVENT_NAME=event,
                GITHUB_RUN_ID=str(run_id),
                GITHUB_STEP_SUMMARY=str(summary),
                GITHUB_WORKSPACE=str(workdir),
            )
            if "uses" in step:
                result = _github_action(step, workdir, state, run_id)
            else:
                shell = step.get("shell", job_shell)
                script = workdir.parent / f"step-{run_id}-{index}.sh"
                script.write_text(_github_value(step["run"], secrets))
                code, output = _run_script(
                    [*GITHUB_SHELLS[shell], str(script)], workdir, env, groups
                )
                result = StepResult(name, "success" if code == 0 else "failure", code, output)
            result.name = name
            run.steps.append(result)
            failed = failed or result.status == "failure"
    finally:
        for pgid in groups:
            _kill_group(pgid)
    if event == "push" and run.conclusion == "success":
        with (state / "successful-main-runs").open("a") as runs:
            runs.write(f"{run_id}\n")
    return run


def _github_action(step: Mapping[str, Any], workdir: Path, state: Path, run_id: int) -> StepResult:
    uses = str(step["uses"])
    action = uses.split("@")[0]
    if action in ("actions/checkout", "actions/setup-python"):
        return StepResult(uses, "success", 0, "(stood in for by the test)")
    if action == "actions/upload-artifact":
        options = step.get("with") or {}
        store = state / str(run_id) / str(options["name"])
        source = workdir / str(options["path"])
        if not source.exists():
            return StepResult(uses, "failure", 1, f"no files found at {options['path']}")
        store.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, store, dirs_exist_ok=True)
        else:
            shutil.copy2(source, store / source.name)
        return StepResult(uses, "success", 0, f"uploaded {options['path']}")
    raise ValueError(f"no stand-in for action {uses}")


# --- GitLab CI -------------------------------------------------------------------------------


@dataclass
class GitLabPipeline:
    """The jobs a pipeline ran, by name: exit code and output."""

    jobs: dict[str, StepResult] = field(default_factory=dict)


def _gitlab_rule_matches(condition: str, variables: Mapping[str, str]) -> bool:
    """``$A == $B``, ``$A == "text"``, ``!=``, ``&&`` and ``||``: what the recipes use."""

    def operand(text: str) -> str:
        text = text.strip()
        if text.startswith("$"):
            return variables.get(text[1:], "")
        if text[:1] in "\"'":
            return text[1:-1]
        raise ValueError(f"unsupported rule operand {text!r}")

    def comparison(text: str) -> bool:
        for op in ("==", "!="):
            if op in text:
                left, right = text.split(op, 1)
                return (operand(left) == operand(right)) is (op == "==")
        raise ValueError(f"unsupported rule {text!r}")

    return any(
        all(comparison(part) for part in alternative.split("&&"))
        for alternative in condition.split("||")
    )


def _gitlab_job(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    job = dict(config[name])
    parents = job.pop("extends", [])
    merged: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents:
        merged.update(_gitlab_job(config, parent))
    merged.update(job)
    return merged


def _lines(value: object) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def gitlab_script(job: Mapping[str, Any]) -> str:
    """The script the runner feeds the shell for a job's before_script + script."""
    body = []
    for line in _lines(job.get("before_script")) + _lines(job.get("script")):
        body.append(f"echo {shlex.quote('$ ' + line.strip())}")
        body.append(line)
    return GITLAB_PROLOGUE + ": | eval " + shlex.quote("\n".join(body) + "\n") + "\nexit 0\n"


def run_gitlab_job(
    config: Mapping[str, Any],
    name: str,
    *,
    variables: Mapping[str, str],
    workdir: Path,
    base_env: Mapping[str, str],
    shell: str = "bash",
) -> StepResult | None:
    """Run one job if its rules select it; None when they do not."""
    job = _gitlab_job(config, name)
    env = dict(base_env)
    env.update({k: str(v) for k, v in (config.get("variables") or {}).items()})
    env.update({k: str(v) for k, v in (job.get("variables") or {}).items()})
    env.update(variables)
    rules = job.get("rules")
    if rules is not None and not any(
        "if" in rule and _gitlab_rule_matches(str(rule["if"]), env) for rule in rules
    ):
        return None
    script = workdir.parent / f"gitlab-{name}.sh"
    script.write_text(gitlab_script(job))
    groups: list[int] = []
    try:
        with script.open("rb") as stdin:  # the runner pipes the script into the shell
            code, output = _run_script([shell], workdir, env, groups, stdin=stdin)
    finally:
        for pgid in groups:
            _kill_group(pgid)
    return StepResult(name, "success" if code == 0 else "failure", code, output)


class _ArtifactHandler(http.server.BaseHTTPRequestHandler):
    """``GET /api/v4/projects/:id/jobs/artifacts/:ref/raw/:path?job=NAME`` with JOB-TOKEN."""

    artifacts: Path
    token: str

    def do_GET(self) -> None:
        match = re.fullmatch(
            r"/api/v4/projects/[^/]+/jobs/artifacts/([^/]+)/raw/([^?]+)\?job=([\w.-]+)",
            self.path,
        )
        if self.headers.get("JOB-TOKEN") != self.token:
            self.send_error(401)
            return
        path = self.artifacts / match.group(3) / match.group(2) if match else None
        if path is None or not path.is_file():
            self.send_error(404)
            return
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


@contextlib.contextmanager
def artifact_api(artifacts: Path, token: str) -> Iterator[str]:
    """GitLab's job-artifacts API on loopback, serving ``artifacts/<job>/<path>``; yields
    the ``CI_API_V4_URL``."""
    handler = type("Handler", (_ArtifactHandler,), {"artifacts": artifacts, "token": token})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v4"
    finally:
        server.shutdown()
        server.server_close()


def load_yaml(text: str) -> Any:
    return yaml.safe_load(text)
