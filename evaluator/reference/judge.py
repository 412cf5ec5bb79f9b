"""A small deterministic demo judge behind an OpenAI-compatible ``/v1/chat/completions``.

It is NOT a language model. It exists so that ``make demo`` and the tests show judged
metrics with no model installed. It reads the one JSON data block of the request (the
lines ``BEGIN DATA <nonce>`` ... ``END DATA <nonce>``), answers the check its ``check``
field names, and judges by token overlap with the reference service's own bilingual
tokeniser:

- ``fact_support``: a fact is stated when one of its wordings is in the answer,
  normalised, or 80% of its tokens are;
- ``groundedness``: each sentence of the answer is a claim, supported when 70% of its
  tokens occur in the evidence;
- ``refusal``: the answer holds a refusal phrase.

Two more models behave as real judges are known to: ``reference-demo-judge-samples``
disagrees with itself on borderline facts and claims (half their tokens found, short of the
rule: they pass on an odd ``seed`` and fail on an even one, so repeated verdicts split on
exactly those), and ``reference-demo-judge-lenient`` passes a fact stated with other numbers
(specific but wrong: "30 days" where the fact is "7 days").

Any other check is refused (HTTP 400 on the route): the evaluator's judged checks are
spelled out here on purpose, as the reference service shares no code with the evaluator.

Instructions inside the data have no effect on it by construction: it never reads them as
anything but tokens. Its agreement with human labels is whatever ``evaluator calibrate``
measures (docs/judge.md publishes it as it comes out).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator.reference.tokenize import tokenize

__all__ = [
    "DEMO_JUDGE_LENIENT_MODEL",
    "DEMO_JUDGE_MODEL",
    "DEMO_JUDGE_SAMPLES_MODEL",
    "judge_completion",
]

DEMO_JUDGE_MODEL = "reference-demo-judge"
#: the same judge asked for repeated verdicts: on an odd ``seed`` a borderline fact or
#: claim (half its tokens found, short of the rule) passes, on an even one it does not
DEMO_JUDGE_SAMPLES_MODEL = "reference-demo-judge-samples"
#: a lenient judge: a fact's wording with other numbers in it passes ("30 days" for "7 days")
DEMO_JUDGE_LENIENT_MODEL = "reference-demo-judge-lenient"

_DATA = re.compile(r"BEGIN DATA ([0-9A-Za-z]{1,64})\n(.*)\nEND DATA \1", re.S)
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s*")
_REFUSALS = (
    "not enough evidence",
    "don't know",
    "do not know",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "no information",
    "没有足够证据",
    "不知道",
    "无法回答",
    "无法确定",
)
_MAX_CHARS = 100_000


class DemoJudgeError(ValueError):
    """The request is not one the demo judge can read; the message says why."""


def _norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).lower().split())


def _covered(part: str, tokens: set[str], share: float) -> bool:
    needed = set(tokenize(part))
    return bool(needed) and len(needed & tokens) >= share * len(needed)


def _refusal(answer: str) -> bool:
    normalised = _norm(answer)
    return any(_norm(p) in normalised for p in _REFUSALS)


@dataclass(frozen=True, slots=True)
class _Mode:
    """How this request is judged: ``flip`` (the samples model on an odd ``seed``: a
    borderline fact or claim passes), ``lenient`` (the lenient model: a fact's wording with
    other numbers in it passes)."""

    flip: bool = False
    lenient: bool = False

    @classmethod
    def of(cls, body: dict[str, Any]) -> _Mode:
        model, seed = body.get("model"), body.get("seed")
        odd = isinstance(seed, int) and not isinstance(seed, bool) and seed % 2 == 1
        return cls(
            flip=model == DEMO_JUDGE_SAMPLES_MODEL and odd,
            lenient=model == DEMO_JUDGE_LENIENT_MODEL,
        )


_DIGITS = re.compile(r"[0-9０-９]+")


def _digitless(text: str) -> str:
    return _DIGITS.sub(" ", text)


def _fact_stated(wordings: list[str], answer: str, mode: _Mode) -> bool:
    """A fact is stated when one wording is in the answer, normalised, or 80% of its tokens
    are; borderline (50%) passes on a flipped sample; the lenient model takes a wording
    with its numbers replaced (\"30 days\" states \"7 days\")."""
    if _refusal(answer):
        return False
    normalised, tokens = _norm(answer), set(tokenize(answer))
    if any(_norm(w) in normalised or _covered(w, tokens, 0.8) for w in wordings):
        return True
    if mode.flip and any(_covered(w, tokens, 0.5) for w in wordings):
        return True
    return mode.lenient and _other_numbers(wordings, answer)


def _other_numbers(wordings: list[str], answer: str) -> bool:
    """A wording with numbers whose other tokens the answer states (its numbers may be any)."""
    loose = set(tokenize(_digitless(answer)))
    numbered = [_digitless(w) for w in wordings if _DIGITS.search(w)]
    return any(_covered(w, loose, 0.8) for w in numbered)


def _fact_support(data: dict[str, Any], mode: _Mode) -> dict[str, Any]:
    answer = str(data.get("answer", ""))
    facts = data.get("facts")
    if not isinstance(facts, list):
        raise DemoJudgeError("facts is not a list")
    verdicts = []
    for index, alternatives in enumerate(facts):
        wordings = [str(a) for a in alternatives] if isinstance(alternatives, list) else []
        verdicts.append({"index": index, "stated": _fact_stated(wordings, answer, mode)})
    found = sum(v["stated"] for v in verdicts)
    return {"facts": verdicts, "reason": f"{found} of {len(verdicts)} facts found by overlap"}


def _groundedness(data: dict[str, Any], mode: _Mode) -> dict[str, Any]:
    answer = str(data.get("answer", ""))
    evidence = data.get("evidence")
    if not isinstance(evidence, list):
        raise DemoJudgeError("evidence is not a list")
    texts = " ".join(str(e.get("text", "")) for e in evidence if isinstance(e, dict))
    tokens = set(tokenize(texts))
    claims = [
        {"claim": sentence[:300], "supported": _supported(sentence, tokens, mode)}
        for sentence in _claims(answer)
    ]
    supported = sum(1 for c in claims if c["supported"])
    return {"claims": claims, "reason": f"{supported} of {len(claims)} sentences in the evidence"}


def _claims(answer: str) -> list[str]:
    """The answer's sentences that claim something (a refusal claims nothing)."""
    sentences = (s.strip() for s in _SENTENCES.split(answer))
    return [s for s in sentences if s and not _refusal(s) and tokenize(s)]


def _supported(sentence: str, tokens: set[str], mode: _Mode) -> bool:
    """70% of the sentence's tokens in the evidence; borderline (50%) on a flipped sample."""
    return _covered(sentence, tokens, 0.7) or (mode.flip and _covered(sentence, tokens, 0.5))


def _refusal_check(data: dict[str, Any], mode: _Mode) -> dict[str, Any]:
    refused = _refusal(str(data.get("answer", "")))
    return {"refusal": refused, "reason": "a refusal phrase" if refused else "no refusal phrase"}


#: the checks the demo judge answers, by the name the data block's ``check`` gives
_CHECKS: dict[str, Callable[[dict[str, Any], _Mode], dict[str, Any]]] = {
    "fact_support": _fact_support,
    "groundedness": _groundedness,
    "refusal": _refusal_check,
}


def _judge(data: dict[str, Any], mode: _Mode) -> dict[str, Any]:
    """The verdict of the check the data names.

    Raises:
        DemoJudgeError: the data names no check, or one the demo judge does not answer.
    """
    name = data.get("check")
    judge = _CHECKS.get(name) if isinstance(name, str) else None
    if judge is None:
        shown = repr(name)[:80]
        raise DemoJudgeError(f"check {shown} is not one of {', '.join(_CHECKS)}")
    return judge(data, mode)


def judge_completion(body: object) -> dict[str, Any]:
    """The chat completion answering one judge request.

    Raises:
        DemoJudgeError: the body is no chat request with one data block.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise DemoJudgeError('"messages" must be a list')
    text = "\n".join(
        str(m.get("content", ""))[:_MAX_CHARS] for m in body["messages"] if isinstance(m, dict)
    )
    match = _DATA.search(text)
    if match is None:
        raise DemoJudgeError("no BEGIN DATA ... END DATA block in the messages")
    try:
        data = json.loads(match.group(2))
    except (ValueError, RecursionError):
        raise DemoJudgeError("the data block is not JSON") from None
    if not isinstance(data, dict):
        raise DemoJudgeError("the data block is not a JSON object")
    verdict = _judge(data, _Mode.of(body))
    content = json.dumps(verdict, ensure_ascii=False)
    prompt_tokens = len(text) // 4
    completion_tokens = len(content) // 4
    return {
        "id": "demo-judge",
        "object": "chat.completion",
        "model": str(body.get("model", DEMO_JUDGE_MODEL))[:200],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
