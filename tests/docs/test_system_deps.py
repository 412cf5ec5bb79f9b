"""One list of the Debian packages `make test` needs: the Makefile's SYSTEM_DEPS, which
`.ci/run` installs through `make deps` and README.md names, so a local run skips nothing
CI runs without saying why."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _packages() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    block = re.search(r"^SYSTEM_DEPS :=((?:.*\\\n)*.*)$", text, re.M)
    assert block is not None
    return {pair.split(":")[1] for pair in block.group(1).replace("\\\n", " ").split()}


def test_ci_installs_through_make_deps() -> None:
    """CI installs the system packages through ``make deps``, with no second list."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make deps$", ci, re.M)
    assert "apt-get install" not in ci  # no second list


def test_the_readme_names_every_package() -> None:
    """The README names every system package ``make deps`` installs."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    packages = _packages()
    assert {"prometheus", "prometheus-alertmanager", "prometheus-pushgateway"} <= packages
    assert [] == [p for p in sorted(packages) if f"`{p}`" not in readme]
