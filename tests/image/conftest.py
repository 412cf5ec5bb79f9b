"""The image tests build and run deploy/Dockerfile with podman (``make image-test``).

They are left out of the default pytest run (``--ignore=tests/image``) because they take a
minute or two; ``make test`` runs them after the unit tests. Where podman cannot run they
are skipped on a developer's machine, and fail in CI (``CI=true``): .ci/run installs podman.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.image.deployment import Deployment, deployed


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The image deployed as the example says, in its own network namespace, for the module's
    tests."""
    with deployed(Path(tmp_path_factory.mktemp("image")), ci=os.environ.get("CI") == "true") as d:
        yield d
