"""The runbook links default to the daemon's own /runbook page, and docs/deploy.md says how
to set yours.

The documented command is run (into a temporary output, never over the committed files) and
every alert's link must then be on the new host, anchors kept.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.deploy.deploy_support import DEPLOY

DOC = DEPLOY.parent / "docs" / "deploy.md"
GENERATOR = DEPLOY / "k8s" / "generate_prometheusrule.py"
#: the base the shipped rules link (the daemon's own runbook page at its default address)
PLACEHOLDER = "http://127.0.0.1:9464/runbook"


def _documented_commands() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Runbook links: set your host", 1)[1].split("\n## ", 1)[0]
    return [
        shlex.split(line)
        for line in section.splitlines()
        if line.startswith("python deploy/k8s/generate_prometheusrule.py")
    ]


def _runbook_urls(rule: dict[str, object]) -> list[str]:
    return [
        str(r["annotations"]["runbook_url"])
        for g in rule["spec"]["groups"]  # type: ignore[index]
        for r in g["rules"]
        if "annotations" in r and "runbook_url" in r["annotations"]
    ]


def test_the_docs_name_the_placeholder_and_the_flag() -> None:
    """The docs name the runbook base the shipped rules carry and the flags that replace
    it."""
    text = DOC.read_text(encoding="utf-8")
    assert PLACEHOLDER in text
    assert "--runbook-base" in text and "--rules-in-place" in text
    committed = (DEPLOY / "prometheus" / "rules" / "alerts.yml").read_text(encoding="utf-8")
    assert PLACEHOLDER in committed  # what the docs call the placeholder is what ships


@pytest.mark.e2e
def test_the_documented_output_command_moves_every_link(tmp_path: Path) -> None:
    """The documented command writing a PrometheusRule moves every runbook link to the given
    base."""
    (command,) = [c for c in _documented_commands() if "--output" in c]
    base = command[command.index("--runbook-base") + 1]
    output = tmp_path / "prometheusrule.yaml"
    command[command.index("--output") + 1] = str(output)
    done = subprocess.run(
        [sys.executable, str(GENERATOR), *command[2:]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    urls = _runbook_urls(yaml.safe_load(output.read_text(encoding="utf-8")))
    assert urls and all(re.fullmatch(re.escape(base) + r"#[a-z0-9-]+", u) for u in urls), urls
    assert PLACEHOLDER not in output.read_text(encoding="utf-8")


def test_the_in_place_command_is_documented_with_a_valid_base() -> None:
    """The documented in-place command gives a valid base URL."""
    (command,) = [c for c in _documented_commands() if "--rules-in-place" in c]
    base = command[command.index("--runbook-base") + 1]
    assert re.fullmatch(r"https?://[^\s#]+", base)
