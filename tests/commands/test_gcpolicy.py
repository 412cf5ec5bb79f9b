"""The commands' garbage-collector policy (evaluator.commands.gcpolicy): the daemon's part."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from evaluator.commands import demo_stack
from evaluator.commands import serve as serve_command
from evaluator.commands.gcpolicy import freeze_startup


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Unfreeze the collector's frozen objects before and after the test."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_freeze_startup_takes_what_exists_out_of_the_passes() -> None:
    """Freezing at start-up takes the objects that exist out of the collector's passes."""
    tracked = len(gc.get_objects())
    freeze_startup()
    assert gc.get_freeze_count() >= tracked // 2
    assert len(gc.get_objects()) < tracked // 2


@pytest.mark.usefixtures("unfrozen")
def test_serve_freezes_after_start_up_before_the_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The modules, the settings and the logging are built, then frozen, then served."""
    frozen_when_served: list[int] = []

    def serve(settings: Any, reload: Any) -> int:
        frozen_when_served.append(gc.get_freeze_count())
        return 0

    settings = SimpleNamespace(log_format="json", log_level="info")
    monkeypatch.setattr(serve_command, "_settings", lambda options: settings)
    monkeypatch.setattr(serve_command, "configure_logging", lambda *args: None)
    monkeypatch.setattr(serve_command, "serve", serve)
    assert serve_command.handle(SimpleNamespace()) == 0  # type: ignore[arg-type]
    assert frozen_when_served and frozen_when_served[0] > 10_000


@pytest.mark.usefixtures("unfrozen")
def test_demo_freezes_before_its_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    """`evaluator demo` runs a daemon too: the same policy, applied before it starts."""
    frozen_when_served: list[int] = []

    async def serve(*args: Any) -> None:
        frozen_when_served.append(gc.get_freeze_count())

    baseline = SimpleNamespace(path=None)
    monkeypatch.setattr(demo_stack, "_settings", lambda options, baselines=None: object())
    monkeypatch.setattr(demo_stack, "_check_ports", lambda options: None)
    monkeypatch.setattr(demo_stack, "_start_reference", lambda options, children: None)
    monkeypatch.setattr(demo_stack, "_baselines", lambda settings, options: (baseline, None))
    monkeypatch.setattr(demo_stack, "_start_prometheus", lambda options, tmp, children: None)
    monkeypatch.setattr(demo_stack, "_serve", serve)
    monkeypatch.setattr(demo_stack, "without_created_series", lambda: None)
    options = SimpleNamespace(reports_dir=None, dataset=None, conversations=None)
    assert demo_stack.run_demo(options) == 0  # type: ignore[arg-type]
    assert frozen_when_served and frozen_when_served[0] > 10_000
