"""Running a ```` ```console ```` example as a reader would type it, and comparing the output.

A block holds commands (``$ `` lines; a line ending in ``\\`` continues on the next) each
followed by the output it prints, stdout and stderr together as a terminal shows them. A
command that exits non-zero ends its output with ``[N]`` on a line of its own (cram's
convention), so an example cannot hide a failure. The commands of one block run in one
``bash`` process, so ``export`` and ``cd`` carry over to the next command of the block; the
blocks of one page share a working directory, a fresh copy of the repository's files, so a
report written by one example can be read by the next.

Examples talk to the reference RAG service at ``http://127.0.0.1:8900`` as the docs tell
readers to start it; the test starts one on a free port and rewrites that address in the
commands, and back in the output, so parallel test runs never collide on a port.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.expected import matches, normalise

__all__ = ["DOCS_ADDRESS", "Command", "Outcome", "parse_console", "run_console"]

#: the reference service's address as the docs write it
DOCS_ADDRESS = "127.0.0.1:8900"
#: how long one block may run (the whole docs tier aims at under a minute)
BLOCK_TIMEOUT_SECONDS = 60.0


@dataclass
class Command:
    """One ``$`` command of a block and the output it must print."""

    line: int  # 1-based line in the page
    text: str
    expected: str = ""


@dataclass
class Outcome:
    """What one command printed, with its exit status appended as ``[N]`` when non-zero."""

    command: Command
    actual: str

    @property
    def ok(self) -> bool:
        """Whether the command printed what the page says."""
        return matches(self.command.expected, self.actual)


@dataclass
class Page:
    """State the blocks of one page share."""

    workdir: Path
    service_address: str
    env: dict[str, str] = field(default_factory=dict)


def parse_console(source: str, first_line: int) -> list[Command]:
    """The commands of a console block whose first line is page line ``first_line``."""
    commands: list[Command] = []
    lines = source.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("$ ") or line == "$":
            text = line[2:]
            start = index
            while text.endswith("\\") and index + 1 < len(lines):
                index += 1
                text += "\n" + lines[index]
            commands.append(Command(first_line + start, text))
        elif commands:
            commands[-1].expected += line + "\n"
        elif line.strip():
            raise ValueError(f"line {first_line + index}: output before the first `$ ` command")
        index += 1
    if not commands:
        raise ValueError(f"line {first_line}: a console block without a `$ ` command")
    return commands


def example_env(bin_dir: Path, home: Path) -> dict[str, str]:
    """A reader's clean shell: the project's ``evaluator`` on PATH, no EVALUATOR_ settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EVALUATOR_", "RAG_", "PYTEST_", "COV_"))
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
        HOME=str(home),
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as on a terminal
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="100",
        TERM="dumb",
        TZ="UTC",
        LC_ALL="C.UTF-8",
    )
    env.pop("NO_COLOR", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def run_console(commands: list[Command], page: Page) -> list[Outcome]:
    """Run the commands of one block in one bash process; one outcome per command."""
    marker = f"__docs_example_{uuid.uuid4().hex}__"
    script = ["exec 2>&1"]
    for command in commands:
        script.append(command.text.replace(DOCS_ADDRESS, page.service_address))
        script.append(f'printf "\\n{marker} %d\\n" "$?"')
    try:
        completed = subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
            cwd=page.workdir,
            env=page.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            timeout=BLOCK_TIMEOUT_SECONDS,
            check=False,
        )
        output = completed.stdout.decode("utf-8", errors="replace")
    except subprocess.TimeoutExpired as exc:
        partial = (exc.stdout or b"").decode("utf-8", errors="replace")
        output = partial + f"\n{marker} timeout\n"
    output = output.replace(page.service_address, DOCS_ADDRESS)
    outcomes: list[Outcome] = []
    rest = output
    for command in commands:
        head, sep, tail = rest.partition(f"\n{marker} ")
        if not sep:
            outcomes.append(Outcome(command, head + "\n[the block stopped before this command]"))
            rest = ""
            continue
        status, _, rest = tail.partition("\n")
        text = "\n".join(normalise(head))
        if status != "0":
            text += f"\n[{status}]"
        outcomes.append(Outcome(command, text))
    return outcomes


def python_bin_dir() -> Path:
    """The directory of the interpreter running the tests: the project's ``.venv/bin``."""
    return Path(sys.executable).parent
