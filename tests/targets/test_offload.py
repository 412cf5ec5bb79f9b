"""The child process that decodes large bodies (evaluator/targets/offload.py): the same value
as the border's own decode on hostile bodies, surrogates counted here, and a child that dies
fails one body with an error kind, not the caller, and the next body gets a new one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator

import pytest

from evaluator import border
from evaluator.errors import ResponseMemoryError
from evaluator.targets import offload

pytestmark = pytest.mark.e2e  # each test starts the child process

HOSTILE = [
    json.dumps({"answer": "\ufdfa" * 300_000, "retrieved": [{"id": "d0"}]}, ensure_ascii=False),
    json.dumps({"answer": "\ufb03" * 300_000}, ensure_ascii=False),
    '{"answer": "' + "\\ud83d x" * 50_000 + '"}',  # lone surrogates, as JSON escapes
    json.dumps({"ids": [str(i) for i in range(100_000)]}),
]


@pytest.fixture(autouse=True)
def _fresh_pool() -> Iterator[None]:
    yield
    offload.shutdown()


@pytest.mark.parametrize("body", HOSTILE, ids=["fdfa", "ligatures", "surrogates", "ids"])
def test_the_child_decodes_as_the_border_does(body: str) -> None:
    """A body decoded in the child process gives what the border gives inline, its surrogate
    replacements counted here."""
    content = body.encode("utf-8")
    before = border.surrogates_replaced()
    got = asyncio.run(offload.decode_off_process(content))
    counted = border.surrogates_replaced() - before
    middle = border.surrogates_replaced()
    assert got == border.loads(content)
    # the child's replacements are counted in this process, as an inline decode counts them
    assert counted == border.surrogates_replaced() - middle


def test_bad_json_is_the_borders_value_error() -> None:
    """A body that is not JSON fails off-process as it fails inline, with a ValueError."""
    with pytest.raises(ValueError):
        asyncio.run(offload.decode_off_process(b'{"answer": '))


def test_a_killed_child_fails_one_body_and_the_next_gets_a_new_one() -> None:
    """A decoding child killed mid-way fails that body as a memory error and the next body gets
    a fresh child."""

    async def scenario() -> object:
        assert await offload.decode_off_process(b"[1]") == [1]
        pool = offload._executor()
        for pid in list(pool._processes):  # the worker, killed as the OOM killer would
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(ResponseMemoryError):
            await offload.decode_off_process(b'{"a": 1}')
        return await offload.decode_off_process(b'{"a": 2}')

    assert asyncio.run(scenario()) == {"a": 2}
