"""The CI recipes of docs/ci.md, run as GitHub Actions and GitLab CI run them.

Each recipe's YAML is read from the page (so the page cannot drift from what is tested) and
its shell steps run under the shell that CI system uses (:mod:`tests.docs.ci_runners`),
against the bundled reference service the recipe itself starts. The release pipeline must
pass when nothing changed and block when the reference service's reranker is broken
(``RAG_REFERENCE_FAILURE_MODES=rerank_degraded``): a recipe that can never block, or that
fails the unchanged service against its own baseline, is useless.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.docs.ci_runners import (
    GitHubRun,
    StepResult,
    artifact_api,
    load_yaml,
    make_stubs,
    run_github_job,
    run_gitlab_job,
)
from tests.docs.conftest import ROOT, copy_checkout
from tests.docs.console import example_env, python_bin_dir
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_YAML_BLOCK = re.compile(
    r"```ya?ml\n(# (\.github/workflows/[\w.-]+|\.gitlab-ci\.yml)\n.*?)```", re.S
)
BROKEN = {"RAG_REFERENCE_FAILURE_MODES": "rerank_degraded"}


def recipes() -> dict[str, tuple[Path, str]]:
    """Every CI recipe in the docs, by the file it would be saved as."""
    found: dict[str, tuple[Path, str]] = {}
    for page in PAGES:
        for match in _YAML_BLOCK.finditer(page.read_text(encoding="utf-8")):
            found[match.group(2)] = (page, match.group(1))
    return found


def _recipe(kind: str) -> Any:
    """The recipe's YAML with the reference service moved to a free port."""
    name = next(n for n in recipes() if n.startswith(kind))
    text = recipes()[name][1].replace("8900", str(free_port()))
    return load_yaml(text)


def _env(tmp_path: Path) -> dict[str, str]:
    stubs = make_stubs(tmp_path / "stubs")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = example_env(python_bin_dir(), home)
    env["PATH"] = f"{stubs}:{env['PATH']}"
    return env


def _explain(result: GitHubRun | StepResult) -> str:
    if isinstance(result, StepResult):
        return f"{result.name}: {result.status} ({result.exit_code})\n{result.output[-4000:]}"
    return "\n".join(
        f"--- {s.name}: {s.status} ({s.exit_code})\n{s.output[-3000:]}" for s in result.steps
    )


def test_every_recipe_in_the_docs_is_one_this_module_runs() -> None:
    """A new recipe on any page needs a runner here; both kinds are present."""
    kinds = {name.split("/")[0] for name in recipes()}
    assert {".github", ".gitlab-ci.yml"} == kinds, sorted(recipes())


def test_github_actions_recipe_passes_unchanged_and_blocks_a_broken_reranker(
    tmp_path: Path,
) -> None:
    """The GitHub Actions recipe runs unchanged, passes a good change and blocks one that breaks
    the reranker."""
    workflow = _recipe(".github")
    (job,) = workflow["jobs"]
    env = _env(tmp_path)
    state = tmp_path / "artifacts"
    state.mkdir()
    env["GH_STUB_STATE"] = str(state)

    def run(run_id: int, event: str, extra: dict[str, str], **kw: Any) -> GitHubRun:
        workdir = copy_checkout(tmp_path / f"run-{run_id}")
        return run_github_job(
            workflow, job, event=event, run_id=run_id, workdir=workdir,
            base_env={**env, **extra}, state=state, **kw,
        )  # fmt: skip

    main = run(1, "push", {})
    assert "success" == main.conclusion, _explain(main)
    assert (state / "1" / "rag-baseline" / "baseline.json").is_file()

    unchanged = run(2, "pull_request", {})
    assert "success" == unchanged.conclusion, _explain(unchanged)
    assert 0 == unchanged.step("Gate the candidate").exit_code
    summary = (tmp_path / "step-summary-2.md").read_text()
    assert "Release gate passed" in summary, summary

    broken = run(3, "pull_request", BROKEN)
    gate = broken.step("Gate the candidate")
    assert "failure" == broken.conclusion, _explain(broken)
    assert 2 == gate.exit_code, _explain(gate)
    assert "mrr" in (tmp_path / "step-summary-3.md").read_text()
    assert (state / "3" / "rag-gate" / "candidate.json").is_file()  # if: always() uploads

    # what the recipe did before it said `shell: bash`: GitHub's default `bash -e` hides the
    # gate's exit 2 behind tee's 0, and the pull request goes green
    unguarded = run(4, "pull_request", BROKEN, shell_override=None)
    assert "success" == unguarded.step("Gate the candidate").status, _explain(unguarded)


def test_github_actions_recipe_passes_an_unchanged_service_in_any_repository(
    tmp_path: Path,
) -> None:
    """In a repository without config/gates.toml (any repository but this one) the built-in
    rules apply: an unchanged service passes against its own baseline, whatever its levels
    (the reference service's citation precision of 0.79 failed the old built-in floor of
    0.97), and a broken reranker is still blocked."""
    workflow = _recipe(".github")
    (job,) = workflow["jobs"]
    env = _env(tmp_path)
    state = tmp_path / "artifacts"
    state.mkdir()
    env["GH_STUB_STATE"] = str(state)

    def run(run_id: int, event: str, extra: dict[str, str]) -> GitHubRun:
        workdir = copy_checkout(tmp_path / f"run-{run_id}")
        (workdir / "config" / "gates.toml").unlink()
        return run_github_job(
            workflow, job, event=event, run_id=run_id, workdir=workdir,
            base_env={**env, **extra}, state=state,
        )  # fmt: skip

    main = run(1, "push", {})
    assert "success" == main.conclusion, _explain(main)
    unchanged = run(2, "pull_request", {})
    assert 0 == unchanged.step("Gate the candidate").exit_code, _explain(unchanged)
    summary = (tmp_path / "step-summary-2.md").read_text()
    assert "Release gate passed" in summary and "`built-in defaults`" in summary, summary
    broken = run(3, "pull_request", BROKEN)
    assert 2 == broken.step("Gate the candidate").exit_code, _explain(broken)


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_gitlab_ci_recipe_passes_unchanged_and_blocks_a_broken_reranker(
    tmp_path: Path, shell: str
) -> None:
    """Under bash (python:3.11-slim) and under sh (an image without bash) alike."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    config = _recipe(".gitlab-ci")
    env = _env(tmp_path)
    artifacts = tmp_path / "artifacts"
    token = "glcbt-stand-in-token"

    main_vars = {
        "CI_COMMIT_BRANCH": "main",
        "CI_DEFAULT_BRANCH": "main",
        "CI_PIPELINE_SOURCE": "push",
    }
    workdir = copy_checkout(tmp_path / "main")
    assert (
        run_gitlab_job(config, "rag-gate", variables=main_vars, workdir=workdir, base_env=env)
        is None
    )
    baseline = run_gitlab_job(
        config, "rag-baseline", variables=main_vars, workdir=workdir, base_env=env, shell=shell
    )
    assert baseline is not None
    assert 0 == baseline.exit_code, _explain(baseline)
    for path in config["rag-baseline"]["artifacts"]["paths"]:
        (artifacts / "rag-baseline" / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(workdir / path, artifacts / "rag-baseline" / path)

    with artifact_api(artifacts, token) as api:
        mr_vars = {
            "CI_DEFAULT_BRANCH": "main",
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_JOB_TOKEN": token,
            "CI_API_V4_URL": api,
            "CI_PROJECT_ID": "42",
        }
        for name, extra, code in (("unchanged", {}, 0), ("broken", BROKEN, 2)):
            workdir = copy_checkout(tmp_path / name)
            skipped = run_gitlab_job(
                config, "rag-baseline", variables=mr_vars, workdir=workdir, base_env=env
            )
            assert skipped is None  # the baseline job runs on the default branch only
            gate = run_gitlab_job(
                config, "rag-gate", variables=mr_vars, workdir=workdir,
                base_env={**env, **extra}, shell=shell,
            )  # fmt: skip
            assert gate is not None
            assert code == gate.exit_code, _explain(gate)
            assert (workdir / "reports" / "gate-junit.xml").is_file()
            assert "Release gate" in gate.output, _explain(gate)  # the report was printed
