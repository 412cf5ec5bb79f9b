"""The built-in gate rules (used without a gates file) are relative: an unchanged service
passes against its own baseline in any repository, and a broken one still fails. Against
the reference service over loopback HTTP, from a folder without config/gates.toml (as any
repository but this one), through `evaluator run` and `evaluator gate`, and through the
daemon whose failing gate the reference stack's RagEvalGateFailing alert reads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator.cli import main
from evaluator.config import HttpTargetConfig, JobConfig, Settings
from evaluator.gate.rules import DEFAULT_RULES
from tests.support.inprocess import running, until
from tests.support.reference import ReferenceServer, serve_reference

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "evals" / "rag_cases.jsonl"


def test_the_built_in_rules_are_relative() -> None:
    """Each built-in rule compares the candidate with its baseline (must not drop, may drop
    at most, may grow at most): an absolute floor comes only from a gates file."""
    assert set() == {r.kind for r in DEFAULT_RULES} - {
        "max_drop",
        "max_growth",
        "max_relative_growth",
    }


@pytest.fixture(scope="module")
def reference() -> Iterator[ReferenceServer]:
    """The reference service on loopback, for the module."""
    with serve_reference() as server:
        yield server


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder without config/gates.toml: another repository."""
    monkeypatch.chdir(tmp_path)
    for name in list(__import__("os").environ):
        if name.startswith("EVALUATOR_"):
            monkeypatch.delenv(name)
    return tmp_path


def _baseline(reference: ReferenceServer, folder: Path) -> Path:
    path = folder / "baseline.json"
    argv = ["run", "--dataset", str(GOLDEN), "--target-url", f"{reference.url}/rag"]
    assert 0 == main([*argv, "--output", str(path)])
    return path


@pytest.mark.e2e
def test_an_unchanged_service_passes_and_a_broken_reranker_fails(
    reference: ReferenceServer, elsewhere: Path
) -> None:
    """Without a gates file, the reference service passes against its own baseline (its
    citation precision of 0.79 failed the built-in floor of 0.97), and fails with its
    reranker broken."""
    baseline = _baseline(reference, elsewhere)
    live = ["gate", "--baseline", str(baseline), "--dataset", str(GOLDEN)]
    live += ["--target-url", f"{reference.url}/rag"]
    assert 0 == main([*live, "--output", str(elsewhere / "unchanged.json")])
    reference.failure_modes.set(["rerank_degraded"])
    try:
        assert 2 == main([*live, "--output", str(elsewhere / "broken.json")])
    finally:
        reference.failure_modes.set([])


@pytest.mark.e2e
def test_the_daemons_gate_passes_an_unchanged_service(
    reference: ReferenceServer, elsewhere: Path
) -> None:
    """A job with the reference service's baseline and no gates file: rag_eval_gate_passing
    is 1 after a run of the unchanged service, so RagEvalGateFailing (== 0 for 30 minutes)
    does not fire."""
    baseline = _baseline(reference, elsewhere)
    settings = Settings(
        targets=[HttpTargetConfig(name="reference", url=f"{reference.url}/rag")],
        jobs=[JobConfig(target="reference", dataset=GOLDEN, baseline=baseline)],
        reports_dir=elsewhere / "reports",
        listen="127.0.0.1:0",
    )
    labels = {"target": "reference", "dataset": "rag_cases"}
    out: dict[str, float | None] = {}

    async def body() -> None:
        async with running(settings) as daemon:

            def gated() -> float | None:
                return daemon.registry.get_sample_value("rag_eval_gate_passing", labels)

            # the gauge is published after the run's report: wait for the gauge itself
            await until(lambda: gated() is not None, 60)
            out["passing"] = gated()

    asyncio.run(body())
    assert 1.0 == out["passing"]
