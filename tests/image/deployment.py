"""The Dockerfile's own run example, started with podman on a loopback-only namespace.

The two ``docker run`` lines of deploy/Dockerfile's header are read from the file and run
as written, with four substitutions that keep the test inside its namespace and out of the
way of other runs: ``docker`` -> ``podman``; the user-defined network -> the namespace
(plus ``--add-host rag:127.0.0.1``, the name the config uses); no published port (nothing
outside the namespace may reach it); names, image tag and ``$PWD`` made concrete.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.image import podman as pm

#: Where the test writes how long each step took (build/ is ignored by git).
TIMINGS_FILE = pm.REPO / "build" / "image-test-timings.json"


def example_commands() -> list[list[str]]:
    """The ``docker run`` commands of the Dockerfile's header comment, split like a shell."""
    text = pm.DOCKERFILE.read_text(encoding="utf-8")
    lines = re.findall(r"^#\s+(docker run .+)$", text, re.M)
    return [shlex.split(line) for line in lines]


def podman_argv(docker: list[str], *, run: str, image: str, netns: pm.Netns) -> list[str]:
    """One example command rewritten for the test (see the module docstring)."""
    assert docker[:2] == ["docker", "run"], docker
    out: list[str] = ["run", "--label", pm.PREFIX]
    args = iter(docker[2:])
    for arg in args:
        if arg == "--network":
            next(args)
            out += ["--network", f"ns:{netns.path}", "--add-host", "rag:127.0.0.1"]
        elif arg == "-p":
            next(args)
        elif arg == "--name":
            out += ["--name", f"{run}-{next(args)}"]
        elif arg == "rag-evaluator":
            out.append(image)
        else:
            out.append(arg.replace("$PWD", str(pm.REPO)))
    return out


@dataclass
class Deployment:
    """The running containers: the reference service ``rag`` and the daemon ``evaluator``."""

    run: str
    image: str
    netns: pm.Netns
    timings: pm.Timings
    containers: dict[str, str] = field(default_factory=dict)

    def container(self, role: str) -> str:
        """The container of ``role``."""
        return self.containers[role]

    def metrics(self) -> str:
        """The evaluator container's /metrics."""
        status, body = self.netns.get("http://127.0.0.1:9464/metrics")
        assert status == 200, body
        return body

    def complete_runs(self) -> float:
        """The complete runs the evaluator container has counted."""
        found = re.search(
            r'^rag_eval_runs_total\{[^}]*outcome="complete"[^}]*\} (\S+)$', self.metrics(), re.M
        )
        return float(found[1]) if found else 0.0

    def wait_for_complete_run(self, timeout: float = 120) -> dict[str, object]:
        """The report of the latest run, once a complete one has finished."""
        deadline = time.monotonic() + timeout
        while self.complete_runs() < 1:
            if time.monotonic() > deadline:
                logs = pm.podman("logs", "--tail", "5", self.container("evaluator"), check=False)
                raise AssertionError(f"no complete run in {timeout}s:\n{logs[-3000:]}")
            time.sleep(1)
        status, body = self.netns.get("http://127.0.0.1:9464/reports/latest")
        assert status == 200, body
        report: dict[str, object] = json.loads(body)
        return report


def _wait_for_http(netns: pm.Netns, url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while netns.get(url)[0] != 200:
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer 200 within {timeout}s")
        time.sleep(0.5)


@contextlib.contextmanager
def deployed(workdir: Path, *, ci: bool) -> Iterator[Deployment]:
    """Build the image, start the example's containers; remove everything afterwards."""
    try:
        pm.check_available()
    except pm.PodmanUnavailable as exc:
        if ci:
            pytest.fail(f"the image cannot be built and run here: {exc}", pytrace=False)
        pytest.skip(f"podman cannot run here: {exc}")
    saved_conf = os.environ.get("CONTAINERS_CONF")
    os.environ["CONTAINERS_CONF"] = str(pm.containers_conf(workdir))
    run = f"{pm.PREFIX}-{os.getpid()}"
    deployment = Deployment(
        run=run,
        image=f"localhost/{pm.PREFIX}:{os.getpid()}",
        netns=pm.Netns(run),
        timings=pm.Timings({}),
    )
    try:
        pm.remove_leftovers()
        cache = pm.cache_dir()
        with deployment.timings.step("total_build"):
            base = pm.ensure_base(cache, deployment.timings)
            wheels = pm.ensure_wheels(cache, deployment.timings)
            pm.build_image(deployment.image, base, wheels, workdir, deployment.timings)
        deployment.netns.create()
        rag, evaluator = example_commands()
        for role, command in (("rag", rag), ("evaluator", evaluator)):
            argv = podman_argv(command, run=run, image=deployment.image, netns=deployment.netns)
            deployment.containers[role] = f"{run}-{role}"
            pm.podman(*argv)
            port = 8900 if role == "rag" else 9464
            _wait_for_http(deployment.netns, f"http://127.0.0.1:{port}/healthz")
        yield deployment
    finally:
        for name in deployment.containers.values():
            pm.podman("rm", "-f", "-v", "-t", "5", name, check=False)
        deployment.netns.delete()
        pm.podman("rmi", "-f", deployment.image, check=False)
        if saved_conf is None:
            os.environ.pop("CONTAINERS_CONF", None)
        else:
            os.environ["CONTAINERS_CONF"] = saved_conf
        TIMINGS_FILE.parent.mkdir(exist_ok=True)
        TIMINGS_FILE.write_text(json.dumps(deployment.timings.steps, indent=2) + "\n")
