"""The pages' query parameters under the fuzz tier's hostile values: a real daemon on
loopback, raw requests, every parameter of ``/case-table`` and ``/case`` given the text and
number blocks' values (tests/faults/blocks.py), markup and oversized values.

Whatever arrives, each answer is a page (200, or a 400 / 404 saying why), never a 500;
nothing of the value reaches the page unescaped (no markup, no control character), and the
daemon keeps answering ``/healthz``.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from evaluator.config import HttpTargetConfig, JobConfig, Settings
from tests.faults.blocks import CONTROL, NUMBERS, UNICODE, Block
from tests.faults.surfaces import seeds
from tests.support.inprocess import running, until
from tests.support.loopback import LoopbackServer, Reply
from tests.targets.helpers import GOOD_BODY

pytestmark = pytest.mark.e2e

#: every parameter the pages read, and one they do not
TABLE_PARAMS = ("show", "tag", "q", "sort", "order", "page", "size", "target", "dataset", "x")
CASE_PARAMS = ("id", "target", "dataset")
MARKUP = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
#: a value the URL carries percent-encoded: at most this many characters of a block's value
#: (a page request line is bounded by the server; the longest variants are megabytes)
VALUE_CHARS = 2000
#: an element the value would open if it reached the page unescaped
_MARKUP = re.compile(r"<(script|img)\b", re.IGNORECASE)
#: C0 controls but tab and newline, and the C1 range: none may reach a page raw
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _values(block: Block, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(f"{seed}:pages:{block.name}")
    out = []
    for name, variant in block.variants.items():
        literal = str(variant(rng))
        try:
            value = json.loads(literal)
        except ValueError:
            value = literal  # a number JSON cannot read is sent as its text
        out.append((f"{block.name}:{name}", str(value)[:VALUE_CHARS]))
    return out


def _hostile(seed: int) -> list[tuple[str, str]]:
    values = [v for block in (UNICODE, CONTROL, NUMBERS) for v in _values(block, seed)]
    return [*values, ("markup", MARKUP), ("empty", ""), ("long", "x" * 1500)]


def _quoted(value: str) -> str:
    # lone surrogates travel as the bytes a careless client would send for them
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


async def _get(port: int, path: str) -> tuple[int, str, str]:
    async with asyncio.timeout(10):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        writer.write(request.encode())
        raw = await reader.read()
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    kind = headers.get("content-type", "")
    return int(lines[0].split()[1]), kind, body.decode("utf-8", "replace")


@pytest.mark.parametrize("seed", seeds())
def test_hostile_query_values_get_pages_never_errors(tmp_path: Path, seed: int) -> None:
    """Hostile query values get a page or a 4xx with a message, never a server error."""
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"id": "c1", "question": "q", "relevant_ids": ["d1"], "tags": ["t"]}\n', "utf-8"
    )
    problems: list[str] = []
    with LoopbackServer(lambda _r: Reply(body=GOOD_BODY)) as target:
        settings = Settings(
            targets=[HttpTargetConfig(name="loop", url=target.url)],
            jobs=[JobConfig(target="loop", dataset=golden, interval_seconds=3600)],
            reports_dir=tmp_path / "reports",
            listen="127.0.0.1:0",
        )

        async def attack() -> None:
            async with running(settings) as daemon:
                await until(lambda: daemon.jobs[0].state.outcome is not None)
                port = daemon.http.port
                for label, value in _hostile(seed):
                    paths = [f"/case-table?{p}={_quoted(value)}" for p in TABLE_PARAMS]
                    paths += [f"/case?{p}={_quoted(value)}" for p in CASE_PARAMS]
                    for path in paths:
                        status, kind, body = await _get(port, path)
                        where = f"{label} {path[:60]}"
                        if status not in (200, 400, 404):
                            problems.append(f"{where}: {status}")
                        # the server's own refusal of a request line it will not read is
                        # plain text; every page is HTML
                        if status != 400 and not kind.startswith("text/html"):
                            problems.append(f"{where}: {kind}")
                        if _MARKUP.search(body):
                            problems.append(f"{where}: markup reached the page")
                        if _CONTROL.search(body):
                            problems.append(f"{where}: a control character reached the page")
                    healthz, _, _ = await _get(port, "/healthz")
                    if healthz != 200:
                        problems.append(f"{label}: /healthz {healthz}")

        asyncio.run(attack())
    assert [] == problems, "\n".join(problems)
