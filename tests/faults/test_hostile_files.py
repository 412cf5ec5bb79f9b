"""Any file path through the reader (issue 38.10): every file the product reads from a path
given on the command line or in the config goes through the border's bounded reader, so a
FIFO, a device, a directory, a socket or a file past its cap is refused at once, naming the
path, with the reader's own error: never a wait for a writer, a read of gigabytes, nor an
error the commands do not expect.

**Adding a reader.** A new file the product reads joins by adding one entry to
:data:`READERS`; the test enumerates every (reader, kind of file) pair.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluator.config import load_settings
from evaluator.dataset import load_dataset
from evaluator.errors import EvaluatorError
from evaluator.gate.rules import read_gates
from evaluator.judge.calibration_store import MAX_CALIBRATION_BYTES, read_calibration
from evaluator.judge.labels import MAX_LABELS_BYTES, read_labels
from evaluator.report import read_report

MiB = 1 << 20


@dataclass(frozen=True)
class Reader:
    """A file the product reads: how, its cap, and how a refusal shows (an
    :class:`EvaluatorError` raised, or the problem text it returns)."""

    name: str
    read: Callable[[Path], object]
    cap: int
    #: what a refusal returns instead of raising (None: it raises)
    problem: Callable[[object], str] | None = None


def _calibration_problem(stored: object) -> str:
    problems = getattr(stored, "problems", ())
    return problems[0] if problems else ""


READERS: tuple[Reader, ...] = (
    Reader("golden set", load_dataset, 1 << 30),
    Reader("report", read_report, 1 << 30),
    Reader("config", load_settings, 16 * MiB),
    Reader("gates file", read_gates, 16 * MiB),
    Reader("labels", read_labels, MAX_LABELS_BYTES),
    Reader("calibration", read_calibration, MAX_CALIBRATION_BYTES, _calibration_problem),
)


@pytest.fixture
def kinds(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """One path of each hostile kind: a FIFO nobody writes to, links to /dev/zero and
    /dev/urandom, a directory, a listening Unix socket, a sparse file one byte past 1 GiB
    (past every cap; it takes no disk)."""
    paths = {
        "fifo": tmp_path / "fifo",
        "dev-zero": tmp_path / "zero",
        "dev-urandom": tmp_path / "urandom",
        "directory": tmp_path / "folder",
        "socket": tmp_path / "sock",
        "past-the-cap": tmp_path / "huge",
    }
    os.mkfifo(paths["fifo"])
    paths["dev-zero"].symlink_to("/dev/zero")
    paths["dev-urandom"].symlink_to("/dev/urandom")
    paths["directory"].mkdir()
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(paths["socket"]))
    with paths["past-the-cap"].open("wb") as f:
        f.truncate((1 << 30) + 1)
    yield paths
    listening.close()


def _outcome(reader: Reader, path: Path, seconds: float = 10.0) -> object:
    """What ``reader`` makes of ``path``, from a thread; AssertionError when it is still
    reading after ``seconds`` (a FIFO it waits on is then opened, to let the thread end)."""
    result: list[object] = []

    def target() -> None:
        try:
            result.append(reader.read(path))
        except BaseException as exc:  # asserted below
            result.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if path.is_fifo():
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        raise AssertionError(f"{reader.name}: still reading {path} after {seconds} s")
    return result[0]


_KINDS = ("fifo", "dev-zero", "dev-urandom", "directory", "socket", "past-the-cap")


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_every_reader_refuses_every_hostile_file_at_once(
    reader: Reader, kind: str, kinds: dict[str, Path]
) -> None:
    """Whatever the path is, the reader refuses it within seconds with its own error (or
    the problem it returns), naming the path."""
    path = kinds[kind]
    outcome = _outcome(reader, path)
    if reader.problem is not None and not isinstance(outcome, BaseException):
        message = reader.problem(outcome)
    else:
        assert isinstance(outcome, EvaluatorError), f"{reader.name}: {outcome!r}"
        message = str(outcome)
    assert str(path) in message, message
