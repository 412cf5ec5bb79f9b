"""deploy/Dockerfile built with podman and run as its own header says (``make image-test``).

What this proves: the image builds offline from the lock, runs as uid 10001 on a read-only
root with no capability, needs no network but loopback, serves /healthz, /readyz, /metrics
and /reports/latest, finishes a complete run of the bundled golden set against the reference
service in a second container, decodes a large body in its child process, passes its
HEALTHCHECK and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import re

from tests.image import podman as pm
from tests.image.deployment import Deployment, example_commands


def test_the_example_is_two_containers() -> None:
    """The deployment example runs two containers, the RAG service and the evaluator."""
    roles = [argv[argv.index("--name") + 1] for argv in example_commands()]
    assert roles == ["rag", "evaluator"]


def test_namespace_has_only_loopback(deployment: Deployment) -> None:
    """The deployment's network namespace has only loopback."""
    assert deployment.netns.interfaces() == ["lo"]


def test_health_readiness_and_metrics_answer(deployment: Deployment) -> None:
    """/healthz, /readyz and /metrics answer in the deployed image."""
    base = "http://127.0.0.1:9464"
    assert deployment.netns.get(f"{base}/healthz")[0] == 200
    deployment.wait_for_complete_run()
    status, body = deployment.netns.get(f"{base}/readyz")
    assert (status, json.loads(body)) == (200, {"status": "ready"})
    metrics = deployment.metrics()
    # scrape cost, for the closing notes (build/image-test-timings.json)
    deployment.timings.steps["metrics_bytes"] = len(metrics.encode())
    deployment.timings.steps["metrics_series"] = sum(
        1 for line in metrics.splitlines() if line and not line.startswith("#")
    )
    assert re.search(r'^rag_eval_job_info\{.*dataset="rag_cases".*\} 1\.0$', metrics, re.M)


def test_a_complete_run_scores_every_case(deployment: Deployment) -> None:
    """The deployed evaluator scores every case of the golden set and writes its report to the
    reports volume."""
    report = deployment.wait_for_complete_run()
    dataset = (pm.REPO / "evals" / "rag_cases.jsonl").read_text(encoding="utf-8")
    cases = [line for line in dataset.splitlines() if line.strip()]
    assert (report["case_count"], report["error_count"]) == (len(cases), 0)
    assert report["target"] == "reference"
    # the report was written to the reports volume, through the read-only root
    listed = pm.podman(
        "exec", deployment.container("evaluator"), "ls", "/var/lib/evaluator/reports"
    )
    assert listed.split(), "no report file in the reports volume"


def test_healthcheck_is_in_the_image_and_passes(deployment: Deployment) -> None:
    """The image carries a healthcheck of /healthz, and it passes."""
    config = json.loads(pm.podman("image", "inspect", deployment.image))[0]
    # the OCI image format has no HEALTHCHECK: the build must use --format docker
    assert "docker" in config["ManifestType"]
    healthcheck = config["Healthcheck"]
    assert healthcheck["Test"][0] == "CMD" and "/healthz" in healthcheck["Test"][-1]
    pm.podman("healthcheck", "run", deployment.container("evaluator"))


def test_runs_as_the_unprivileged_user(deployment: Deployment) -> None:
    """The evaluator runs as the unprivileged user with no capability."""
    config = json.loads(pm.podman("image", "inspect", deployment.image))[0]
    assert config["Config"]["User"] == "10001:10001"
    ids = pm.podman("exec", deployment.container("evaluator"), "id", "-u").strip()
    assert ids == "10001"
    caps = pm.podman("exec", deployment.container("evaluator"), "grep", "CapEff", "/proc/1/status")
    assert caps.split()[-1] == "0000000000000000"


def test_root_filesystem_is_read_only(deployment: Deployment) -> None:
    """The container's root filesystem is read-only, /tmp writable."""
    result = pm.run(
        ["podman", "exec", deployment.container("evaluator"), "touch", "/var/lib/evaluator/x"],
        check=False,
    )
    assert result.returncode != 0
    assert "Read-only file system" in result.stderr
    # /tmp is the tmpfs the example mounts
    pm.podman("exec", deployment.container("evaluator"), "touch", "/tmp/x")


def test_installed_packages_are_the_locked_versions(deployment: Deployment) -> None:
    """The image's installed packages are the locked versions."""
    frozen = pm.podman(
        "run", "--rm", "--network=none", "--entrypoint", "python", deployment.image,
        "-m", "pip", "freeze", "--all",
    )  # fmt: skip
    installed = {
        _canonical(name): version
        for name, version in (line.split("==", 1) for line in frozen.split() if "==" in line)
    }
    locked = {
        _canonical(name): version
        for name, version in re.findall(
            r"^([A-Za-z0-9._-]+)==(\S+)", pm.LOCK.read_text(encoding="utf-8"), re.M
        )
    }
    assert locked.items() <= installed.items()
    extra = set(installed) - set(locked) - {"evaluator", "pip", "setuptools", "wheel"}
    assert not extra, f"installed but not locked: {sorted(extra)}"


def test_large_bodies_decode_in_a_child_process_in_the_image(deployment: Deployment) -> None:
    """A body of OFFLOAD_BYTES or more is decoded in a forkserver child process
    (evaluator.targets.offload): that child starts and answers as uid 10001 on the read-only
    root, its socket and semaphores in the container's /tmp and /dev/shm."""
    script = (
        "import asyncio, json\n"
        "from evaluator.targets import offload\n"
        "from evaluator.targets.http import OFFLOAD_BYTES\n"
        "body = json.dumps({'answer': 'fact ' * OFFLOAD_BYTES}).encode()\n"
        "decoded = asyncio.run(offload.decode_off_process(body))\n"
        "offload.shutdown()\n"
        "print(len(body) >= OFFLOAD_BYTES, decoded['answer'] == 'fact ' * OFFLOAD_BYTES)\n"
    )
    out = pm.podman("exec", deployment.container("evaluator"), "python", "-c", script)
    assert out.split() == ["True", "True"]


def test_sigterm_stops_the_daemon_cleanly(deployment: Deployment) -> None:
    """Last: it stops the daemon. Exit code 0 means it was not killed after the timeout."""
    name = deployment.container("evaluator")
    with deployment.timings.step("evaluator_stop"):
        pm.podman("stop", "-t", "45", name, timeout=60)
    state = json.loads(pm.podman("inspect", name))[0]["State"]
    assert state["ExitCode"] == 0, state


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
