"""Build deploy/Dockerfile with podman and run it on a loopback-only network namespace.

No registry and no network inside the build: the base image is made from the Debian mirror
with mmdebstrap and imported under a local name, and the wheels of deploy/requirements.lock
are downloaded on the host (hash-checked) and handed to the build as its ``wheels`` stage.
Both are cached between runs, keyed by what they are made from:

- ``$RAG_EVAL_IMAGE_CACHE`` (default ``~/.cache/rag-evaluator-image``)
  - ``base-<key>.tar``: the mmdebstrap tarball, key = the mmdebstrap command line;
  - ``wheels-<key>/``: the locked wheels, key = the lock file's hash.

A fresh machine builds both (about 35 s and a few seconds). Everything a run creates (image
tag, containers, their anonymous volumes, the namespace) carries the run's pid, so parallel
runs do not collide, and leftovers of a killed run are removed by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
IGNOREFILE = REPO / "deploy" / "Dockerfile.dockerignore"
LOCK = REPO / "deploy" / "requirements.lock"

#: Prefix of every namespace, container and image tag a run creates (then ``-<pid>``).
PREFIX = "rag-eval-imgtest"
BASE_IMAGE = "localhost/rag-eval-imgtest-base"

# Debian bookworm's python3 is 3.11, the version of python:3.11-slim the Dockerfile names.
_MMDEBSTRAP = (
    "mmdebstrap",
    "--variant=minbase",
    "--format=tar",
    "--include=python3,python3-pip,python-is-python3,ca-certificates",
    # Debian marks its interpreter externally managed; the image owns it, as the real one does
    '--customize-hook=rm -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED',
    "bookworm",
)
# Binary wheels for the image's interpreter and libc, whatever the host's Python is.
_WHEEL_PLATFORM = (
    "--only-binary=:all:",
    "--python-version=3.11",
    "--implementation=cp",
    "--abi=cp311",
    "--abi=abi3",
    "--abi=none",
    *(
        f"--platform={tag}"
        for tag in (
            "manylinux_2_28_x86_64",
            "manylinux_2_17_x86_64",
            "manylinux2014_x86_64",
            "manylinux_2_5_x86_64",
            "manylinux1_x86_64",
            "linux_x86_64",
        )
    ),
)
# The host's limits are the ceiling: podman's default rlimits exceed them and runc refuses.
_CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
"""
_REQUIRED_TOOLS = ("podman", "runc", "mmdebstrap", "ip")


class PodmanUnavailable(RuntimeError):
    """This machine cannot build or run the image (reason in the message)."""


def _run(
    argv: Sequence[str | Path],
    *,
    timeout: float = 300,
    check: bool = True,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )
    if check and result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, argv))} exited {result.returncode}\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result


def cache_dir() -> Path:
    """The folder the built image is cached in."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = Path(os.environ.get("RAG_EVAL_IMAGE_CACHE", default / "rag-evaluator-image"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def _cache_lock(cache: Path) -> Iterator[None]:
    """One run at a time fills the cache (two engineers' `make test` may overlap)."""
    with (cache / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _key(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def check_available() -> None:
    """Raise :class:`PodmanUnavailable` unless podman can build and run here."""
    missing = [tool for tool in _REQUIRED_TOOLS if shutil.which(tool) is None]
    if missing:
        raise PodmanUnavailable(
            f"missing {', '.join(missing)}: apt-get install podman buildah runc mmdebstrap uidmap"
        )
    if os.geteuid() != 0:
        raise PodmanUnavailable("needs root (network namespaces, mmdebstrap)")
    info = _run(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"], check=False)
    if info.returncode != 0:
        raise PodmanUnavailable(f"podman info failed: {info.stderr.strip()[-500:]}")


def containers_conf(directory: Path) -> Path:
    """A session-local containers.conf (runc, cgroupfs, rlimits within the host's)."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    cap = 1 << 20  # "unlimited" is not a valid ulimit value
    path = directory / "containers.conf"
    path.write_text(
        _CONTAINERS_CONF.format(
            nofile=min(nofile if nofile >= 0 else cap, 20000),
            nproc=min(nproc if nproc >= 0 else cap, 4096),
        ),
        encoding="utf-8",
    )
    return path


@dataclass
class Timings:
    """Seconds spent per step; written next to the test output for the closing notes."""

    steps: dict[str, float]

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the step called ``name``."""
        start = time.monotonic()
        try:
            yield
        finally:
            self.steps[name] = round(time.monotonic() - start, 2)


def ensure_base(cache: Path, timings: Timings) -> str:
    """The local base image (mmdebstrap bookworm), built and imported only when missing."""
    key = _key(*_MMDEBSTRAP)
    tag = f"{BASE_IMAGE}:{key}"
    if _run(["podman", "image", "exists", tag], check=False).returncode == 0:
        return tag
    with _cache_lock(cache):
        tarball = cache / f"base-{key}.tar"
        if not tarball.exists():
            with timings.step("base_mmdebstrap"):
                partial = cache / f"base-{key}.partial.tar"
                _run([*_MMDEBSTRAP, partial], timeout=600)
                partial.replace(tarball)
        with timings.step("base_import"):
            _run(["podman", "import", "--change", 'CMD ["python3"]', tarball, tag], timeout=300)
    return tag


def ensure_wheels(cache: Path, timings: Timings) -> Path:
    """A folder of the locked wheels (hash-checked by pip), downloaded only when missing."""
    key = _key(LOCK.read_bytes(), *_WHEEL_PLATFORM)
    folder = cache / f"wheels-{key}"
    if (folder / ".complete").exists():
        return folder
    with _cache_lock(cache), timings.step("wheels_download"):
        partial = cache / f"wheels-{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        _run(
            [
                sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
                "--quiet", *_WHEEL_PLATFORM, "--dest", partial, "-r", LOCK,
            ],
            timeout=600,
        )  # fmt: skip
        (partial / ".complete").touch()
        shutil.rmtree(folder, ignore_errors=True)
        partial.replace(folder)
    return folder


def _package_wheel(destination: Path) -> None:
    """The package's own wheel, built from a copy so the checkout gets no build/ folder."""
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}-src-") as tmp:
        source = Path(tmp)
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (REPO / name).exists():
                shutil.copy2(REPO / name, source / name)
        shutil.copytree(
            REPO / "evaluator",
            source / "evaluator",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        _run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", destination, "."],
            cwd=source,
            timeout=300,
        )


def build_image(tag: str, base: str, wheels: Path, workdir: Path, timings: Timings) -> None:
    """podman build of deploy/Dockerfile, no network, wheels handed over as a build context."""
    context = workdir / "wheels-context"
    (context / "wheels").mkdir(parents=True)
    for wheel in wheels.glob("*.whl"):
        try:
            os.link(wheel, context / "wheels" / wheel.name)
        except OSError:
            shutil.copy2(wheel, context / "wheels" / wheel.name)
    with timings.step("package_wheel"):
        _package_wheel(context / "wheels")
    with timings.step("image_build"):
        _run(
            [
                "podman", "build", "--pull=never", "--network=none", "--format=docker",
                "--ignorefile", IGNOREFILE, "--build-context", f"wheels={context}",
                "--build-arg", f"BASE={base}", "-f", DOCKERFILE, "-t", tag, REPO,
            ],
            timeout=600,
        )  # fmt: skip


def remove_leftovers() -> None:
    """Remove namespaces, containers and images of earlier runs whose process is gone."""

    def dead(name: str) -> bool:
        pid = name.rsplit("-", 1)[-1]
        if not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    listed = _run(["ip", "netns", "list"], check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ", 1)[0]
        if name.startswith(PREFIX) and dead(name):
            _run(["ip", "netns", "delete", name], check=False)
    containers = _run(
        ["podman", "ps", "-a", "--filter", f"label={PREFIX}", "--format", "{{.Names}}"],
        check=False,
    ).stdout.split()
    for name in containers:
        run_id = name.rsplit("-", 1)[0]
        if dead(run_id):
            _run(["podman", "rm", "-f", "-v", name], check=False)
    images = _run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", f"localhost/{PREFIX}"],
        check=False,
    ).stdout.split()
    for image in images:
        if dead(image.rsplit(":", 1)[-1]):
            _run(["podman", "rmi", "-f", image], check=False)


@dataclass
class Netns:
    """A network namespace with nothing but a loopback interface, up."""

    name: str

    @property
    def path(self) -> str:
        """The namespace's path."""
        return f"/run/netns/{self.name}"

    def create(self) -> None:
        """Create the namespace with only its loopback interface up."""
        _run(["ip", "netns", "add", self.name])
        _run(["ip", "-n", self.name, "link", "set", "lo", "up"])

    def delete(self) -> None:
        """Delete the namespace."""
        _run(["ip", "netns", "delete", self.name], check=False)

    def interfaces(self) -> list[str]:
        """The namespace's network interfaces."""
        out = _run(["ip", "-n", self.name, "-o", "link", "show"]).stdout
        return [line.split(":")[1].strip() for line in out.splitlines() if line.strip()]

    def get(self, url: str, timeout: float = 5) -> tuple[int, str]:
        """HTTP GET from inside the namespace: (status, body); status 0 when refused."""
        script = (
            "import sys, urllib.request, urllib.error, json\n"
            "try:\n"
            "    r = urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2]))\n"
            "    status, body = r.status, r.read().decode()\n"
            "except urllib.error.HTTPError as e:\n"
            "    status, body = e.code, e.read().decode()\n"
            "except OSError as e:\n"
            "    status, body = 0, str(e)\n"
            "print(json.dumps([status, body]))\n"
        )
        out = _run(
            ["ip", "netns", "exec", self.name, sys.executable, "-c", script, url, str(timeout)],
            timeout=timeout + 10,
        ).stdout
        status, body = json.loads(out)
        return int(status), str(body)


def run(
    argv: Sequence[str | Path], *, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a command; the caller looks at its return code and output."""
    return _run(argv, check=check, timeout=timeout)


def podman(*args: str | Path, check: bool = True, timeout: float = 120) -> str:
    """podman's output of ``args``."""
    return _run(["podman", *args], check=check, timeout=timeout).stdout
