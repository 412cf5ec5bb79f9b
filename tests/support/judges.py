"""Loopback judges for tests: OpenAI-compatible chat-completions endpoints on 127.0.0.1
that judge honestly, return malformed JSON, hang, are fooled by an injected answer,
change their behaviour mid-way, or refuse ``response_format``.

The honest judge reads the data block the evaluator sends (the JSON between the BEGIN/END
DATA lines), answers the check it names, and judges by normalised substring matching:
simple, deterministic, and enough to tell a canary (no expected fact) from a real answer.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from tests.support.loopback import ThreadedApp

__all__ = ["LoopbackJudge", "honest_verdict"]

_DATA = re.compile(r"BEGIN DATA (\w+)\n(.*)\nEND DATA \1", re.S)
_REFUSALS = ("don't know", "do not know", "cannot answer", "不知道", "无法回答", "no information")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _data(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The check the data block names, and the data block."""
    match = _DATA.search(body["messages"][1]["content"])
    assert match is not None, "the evaluator always sends a delimited data block"
    data = json.loads(match.group(2))
    return data["check"], data


def honest_verdict(check: str, data: dict[str, Any]) -> dict[str, Any]:
    """The verdict of a shipped check by normalised substring matching."""
    answer = _norm(data.get("answer", ""))
    if check == "fact_support":
        facts = [
            {"index": i, "stated": any(_norm(a) in answer for a in alternatives)}
            for i, alternatives in enumerate(data["facts"])
        ]
        return {"facts": facts, "reason": "substring match"}
    if check == "groundedness":
        evidence = _norm(" ".join(e["text"] for e in data["evidence"]))
        claims = [c.strip() for c in re.split(r"(?<=[.!?。])\s*", data["answer"]) if c.strip()]
        return {
            "claims": [
                {"claim": c, "supported": _norm(c).rstrip(".。") in evidence} for c in claims
            ],
            "reason": "sentences found in the evidence",
        }
    assert check == "refusal", f"no honest verdict for {check!r}: pass it in verdicts="
    return {"refusal": any(r in answer for r in _REFUSALS), "reason": "refusal phrase"}


def _fooled_verdict(check: str, data: dict[str, Any]) -> dict[str, Any]:
    """A judge that does what the answer tells it to: everything passes."""
    if check == "fact_support":
        return {
            "facts": [{"index": i, "stated": True} for i in range(len(data["facts"]))],
            "reason": "the answer says it was verified",
        }
    if check == "groundedness":
        return {"claims": [{"claim": "all", "supported": True}], "reason": "verified"}
    return {"refusal": True, "reason": "verified"}


_DIGITS = re.compile(r"\d+")


def _lenient_verdict(check: str, data: dict[str, Any]) -> dict[str, Any]:
    """Honest, but a fact worded with numbers is stated by its wording with any numbers:
    "within 31 days" states "within 7 days" (specific but wrong passes; vague does not)."""
    verdict = honest_verdict(check, data)
    if check != "fact_support":
        return verdict
    answer = _DIGITS.sub("#", _norm(data.get("answer", "")))
    for entry, alternatives in zip(verdict["facts"], data["facts"], strict=True):
        masked = [_DIGITS.sub("#", _norm(a)) for a in alternatives if _DIGITS.search(a)]
        entry["stated"] = entry["stated"] or any(m in answer for m in masked)
    return verdict


def _injectable_verdict(check: str, data: dict[str, Any]) -> dict[str, Any]:
    """Honest, but an answer speaking to its judge is obeyed: it passes everything."""
    answer = _norm(data.get("answer", ""))
    if any(word in answer for word in ("evaluat", "grader", "judge", "rubric")):
        return _fooled_verdict(check, data)
    return honest_verdict(check, data)


#: modes that judge every request by a rule of their own, by mode
_RULES = {"fooled": _fooled_verdict, "lenient": _lenient_verdict, "injectable": _injectable_verdict}


class LoopbackJudge(ThreadedApp):
    """``mode``: ``good``, ``prose`` (the verdict wrapped in text), ``malformed`` (broken
    JSON content), ``no_verdict`` (a JSON object of the wrong shape), ``hang`` (never
    answers), ``held`` (honest, each verdict held until :meth:`release`: a judge slower
    than the run), ``fooled`` (passes everything), ``no_schema`` (400 on ``response_format``,
    then honest), ``flip_after`` (honest for ``flip_after`` calls, then inverts every
    boolean: a model changed behind the same name), ``busy`` (503 with ``Retry-After:
    retry_after`` to every call), ``busy_once`` (that to the first call, then honest),
    ``surrogate`` and ``surrogate_outer`` (honest verdicts whose reason and claims hold a
    lone surrogate, escaped in the content or in the body), ``flip_on_seed`` (honest for an even
    ``seed``, every boolean inverted for an odd one: a judge that flips on resample),
    ``lenient`` (honest, but a fact's wording with other numbers states it: specific but
    wrong passes), ``injectable`` (honest, but obeys an answer that speaks to its judge).
    Switch ``mode`` between runs freely. ``latency``: seconds each verdict takes;
    ``rate_limit``: requests admitted per second at most, the others answered 429 with
    ``Retry-After: retry_after`` (counted in ``refused``).
    ``verdicts``: the verdict of each further check by name (a check a test registered),
    from the data block; the judge answers each request by the check its data names."""

    def __init__(
        self,
        mode: str = "good",
        *,
        flip_after: int | None = None,
        verdicts: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
        retry_after: str = "0",
        latency: float = 0.0,
        rate_limit: int | None = None,
    ) -> None:
        self.mode = mode
        self.flip_after = flip_after
        self.retry_after = retry_after
        #: seconds each verdict takes (a model's latency)
        self.latency = latency
        #: requests admitted per second at most; the others get 429 with Retry-After
        self.rate_limit = rate_limit
        #: when each admitted request came (the last second's, for the rate limit)
        self._admitted: collections.deque[float] = collections.deque()
        #: requests refused with 429 by the rate limit
        self.refused = 0
        self.verdicts = dict(verdicts or {})
        self.calls = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.port = 0
        self._init_thread()

    def _verdict(self, body: dict[str, Any]) -> dict[str, Any]:
        """The verdict object for the request's check, as the judge's mode makes it."""
        check, data = _data(body)
        if check in self.verdicts:
            verdict = self.verdicts[check](data)
        elif self.mode in _RULES:
            verdict = _RULES[self.mode](check, data)
        else:
            verdict = honest_verdict(check, data)
        if self.flip_after is not None and self.calls > self.flip_after:
            verdict = _inverted(verdict)
        if self.mode == "flip_on_seed" and body.get("seed", 0) % 2 == 1:
            verdict = _inverted(verdict)
        return verdict

    def _over_the_limit(self) -> bool:
        """A request past ``rate_limit`` in the last second (never without a limit)."""
        return self.rate_limit is not None and _sliding_window(self)

    def release(self) -> None:
        """Let the verdicts held in ``held`` mode (and every later one) go."""
        self._loop.call_soon_threadsafe(self._released.set)

    @property
    def url(self) -> str:
        """The judge's chat-completions URL."""
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    async def _start(self) -> None:
        self._released = asyncio.Event()
        await super()._start()

    async def _stop(self) -> None:
        self._released.set()
        await super()._stop()

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._handle)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        mode = self.mode
        if mode == "no_schema" and "response_format" in body:
            return web.json_response(
                {"error": {"message": "response_format is not supported"}}, status=400
            )
        if self._over_the_limit():
            self.refused += 1
            return web.json_response(
                {"error": {"message": "rate limited"}},
                status=429,
                headers={"Retry-After": self.retry_after},
            )
        self.calls += 1
        if self.latency:
            await asyncio.sleep(self.latency)
        if mode in _HOSTILE:
            return _HOSTILE[mode](self, request)
        if mode == "busy" or (mode == "busy_once" and self.calls == 1):
            return web.json_response(
                {"error": "overloaded"}, status=503, headers={"Retry-After": self.retry_after}
            )
        if mode == "held":
            # an honest verdict, once the test lets it go (release) or the server stops
            await self._released.wait()
        if mode == "hang":
            # until the server stops (its cleanup would otherwise wait on this handler)
            await self._released.wait()
            return web.json_response({"error": "stopped"}, status=503)
        content = json.dumps(self._verdict(body))
        if mode == "prose":
            content = f"Here is my verdict:\n```json\n{content}\n```\nThanks!"
        elif mode == "malformed":
            content = content[: len(content) // 2] + "}}"
        elif mode == "no_verdict":
            content = json.dumps({"score": 5})
        return web.json_response(
            {
                "id": f"chatcmpl-{self.calls}",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        )


def _sliding_window(judge: LoopbackJudge) -> bool:
    """Whether a request now is one too many for the judge's last second (else admitted)."""
    now = time.monotonic()
    while judge._admitted and now - judge._admitted[0] >= 1.0:
        judge._admitted.popleft()
    if judge.rate_limit is not None and len(judge._admitted) >= judge.rate_limit:
        return True
    judge._admitted.append(now)
    return False


def _huge(judge: LoopbackJudge, request: web.Request) -> web.Response:
    return web.Response(body=b'{"choices": [' + b" " * (4 * 1024 * 1024) + b"]}",
                        content_type="application/json")  # fmt: skip


def _deep(judge: LoopbackJudge, request: web.Request) -> web.Response:
    content = '{"facts": ' + "[" * 5000 + "]" * 5000 + "}"
    return web.json_response({"choices": [{"message": {"content": content}}]})


def _echo(judge: LoopbackJudge, request: web.Request) -> web.Response:
    """Every header it was sent, back in the verdict's reason (and its claims)."""
    sent = " ".join(f"{k}={v}" for k, v in request.headers.items())
    body = judge.requests[-1]
    check, data = _data(body)
    verdict = honest_verdict(check, data)
    verdict["reason"] = f"headers: {sent}"
    for claim in verdict.get("claims", []):
        claim["claim"] = sent
        claim["supported"] = False
    return web.json_response({"choices": [{"message": {"content": json.dumps(verdict)}}]})


def _gzip(judge: LoopbackJudge, request: web.Request) -> web.Response:
    return web.Response(body=b"\x1f\x8b" + b"\0" * 64, headers={"Content-Encoding": "gzip"},
                        content_type="application/json")  # fmt: skip


def _surrogates(verdict: dict[str, Any]) -> dict[str, Any]:
    """``verdict`` with a lone UTF-16 surrogate in its reason and in every claim (what a
    JavaScript proxy that cut a string inside an emoji sends)."""
    verdict = {**verdict, "reason": "cut inside an emoji \ud83d"}
    if "claims" in verdict:
        verdict["claims"] = [{"claim": "claim \udc00", "supported": False}]
    return verdict


def _surrogate(judge: LoopbackJudge, request: web.Request) -> web.Response:
    """The surrogate escaped inside the content (JSON inside JSON: ``\\ud83d``)."""
    check, data = _data(judge.requests[-1])
    content = json.dumps(_surrogates(honest_verdict(check, data)))  # ASCII: "\ud83d"
    return web.json_response({"choices": [{"message": {"content": content}}]})


def _surrogate_outer(judge: LoopbackJudge, request: web.Request) -> web.Response:
    """The surrogate escaped in the response body itself (the content holds it raw)."""
    check, data = _data(judge.requests[-1])
    content = json.dumps(_surrogates(honest_verdict(check, data)), ensure_ascii=False)
    return web.json_response({"choices": [{"message": {"content": content}}]})


_HOSTILE = {
    "huge": _huge,
    "deep": _deep,
    "echo": _echo,
    "gzip": _gzip,
    "surrogate": _surrogate,
    "surrogate_outer": _surrogate_outer,
}


def _inverted(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, dict):
        return {k: _inverted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_inverted(v) for v in value]
    return value
