"""The fuzz tier's catalogue: every parsing path that reads outside input, one
:class:`Surface` each, and the generator that turns (surface, block, variant, seed) into one
concrete :class:`Attack`.

**Adding a parser.** A new parser joins the tier by adding one ``Surface`` to
:data:`SURFACES`: its name, how an attack reaches it (``delivery``), which blocks of
:mod:`tests.faults.blocks` apply, and a ``render`` that places hostile fragments into the
slots of an otherwise well-formed input. Nothing else changes: the tests enumerate this
tuple, and the invariants (:mod:`tests.faults.invariants`) are the same for every entry.

Deliveries:

- ``target``: the bytes a target answers (body, stream events, headers), served by a
  :class:`~tests.support.rawhttp.ScriptedRawServer` to a job of a real ``evaluator serve``;
  ``target_toml`` is the rest of the job's ``[[targets]]`` table;
- ``collector``: what an OTLP collector replies to ``evaluator run`` exporting its spans;
- ``golden``, ``report``, ``config``: a file (or an environment value) fed to a real CLI
  (``evaluator validate``, ``evaluator gate``, ``evaluator check``);
- ``openslo``, ``slo_config``: an OpenSLO file and a ``[[slos]]`` table, fed to
  ``evaluator check``;
- ``judge``: what an LLM judge answers every call of ``evaluator judge REPORT``;
- ``labels``, ``calibration``: a human labels file given to ``evaluator calibrate`` and
  ``evaluator review``, and the stored calibration ``evaluator gate`` reads for its judged
  rules.

Every attack is a pure function of its seed: :func:`generate` draws with
``random.Random(f"{seed}:{surface}:{block}")``, so one failing attack reproduces from the
seed and its id printed by the test (``FUZZ_SEED=<seed> pytest -k <id>``).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import random
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tests.faults import blocks
from tests.faults.blocks import Block, Framing, Timing
from tests.support.rawhttp import Piece, http_response

__all__ = [
    "KNOWN_FAILURES",
    "SURFACES",
    "Attack",
    "Delivery",
    "Surface",
    "attacks_for",
    "generate",
    "known_failure",
    "per_pair",
    "seeds",
]

Delivery = Literal[
    "target",
    "collector",
    "golden",
    "report",
    "config",
    "openslo",
    "slo_config",
    "judge",
    "labels",
    "calibration",
]
Frame = Literal["body", "sse", "ndjson", "header"]


@dataclass(frozen=True)
class Rendered:
    """A well-formed input with hostile fragments in it: ``events`` are JSON texts (one for
    a plain body), ``headers`` extra response headers."""

    events: tuple[str, ...]
    headers: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Surface:
    """One parsing path. ``slots`` maps each place a fragment can go to its kind
    (``text`` or ``number``); ``defaults`` fills the others; ``render`` builds the input
    from every slot's JSON literal; ``skip`` names block variants that do not apply (a
    stream's framing to a plain body)."""

    name: str
    delivery: Delivery
    blocks: tuple[str, ...]
    doc: str
    slots: Mapping[str, str]
    defaults: Mapping[str, str]
    render: Callable[[Mapping[str, str]], Rendered]
    frame: Frame = "body"
    content_type: str = "application/json"
    target_toml: str = ""
    skip: frozenset[str] = frozenset()
    #: the job runs a golden set of conversations (the path reads what later turns need)
    conversational: bool = False


@dataclass(frozen=True)
class Attack:
    """One generated attack: where it goes, what was drawn, and the bytes (a served
    response as ``pieces``, or a file's ``data``)."""

    surface: Surface
    block: str
    variant: str
    slot: str
    seed: int
    pieces: tuple[Piece, ...] = ()
    data: bytes = b""

    @property
    def id(self) -> str:
        """The attack's id: its surface, block and variant."""
        return f"{self.surface.name}.{self.block}.{self.variant}"

    @property
    def slug(self) -> str:
        """A target or file name: letters, digits and dashes."""
        raw = f"{self.surface.name}-{self.block}-{self.variant}"
        return "".join(c if c.isalnum() else "-" for c in raw).lower()

    def describe(self) -> str:
        """How to reproduce it: printed with every failure."""
        return f"attack {self.id} (slot {self.slot}) from FUZZ_SEED={self.seed}"


# --- the surfaces ---------------------------------------------------------------------------


def _default_contract(f: Mapping[str, str]) -> Rendered:
    body = (
        f'{{"answer": {f["answer"]}, "retrieved": [{{"id": {f["id"]}, "score": {f["score"]}, '
        f'"text": {f["text"]}}}, {{"id": "d1"}}], "citations": [{f["citation"]}], '
        f'"timings": {{{f["stage"]}: {f["seconds"]}}}}}'
    )
    return Rendered((body,))


_TEXT_DEFAULTS = {
    "answer": '"it is fact0"',
    "id": '"d0"',
    "text": '"evidence"',
    "stage": '"retrieve"',
    "score": "0.9",
    "citation": "1",
    "seconds": "0.001",
    "tokens": "12",
    "out_tokens": "20",
}
_BODY_SLOTS = {
    "answer": "text",
    "id": "text",
    "text": "text",
    "stage": "text",
    "score": "number",
    "citation": "number",
    "seconds": "number",
}
_ALL_BLOCKS = ("unicode", "normalisation", "control", "secrets", "numbers", "bodies")
_TRANSPORT = ("framing", "timing")
#: framing variants that only mean something for a stream of events
STREAM_ONLY = frozenset({"tiny-events", "crlf", "cr-only", "no-end-marker", "done-then-open"})


def _conversation_id(f: Mapping[str, str]) -> Rendered:
    # a stateful service's answer: its conversation id, read and sent back in the next turn
    body = (
        f'{{"answer": {f["answer"]}, "retrieved": [{{"id": {f["id"]}}}], '
        f'"session": {{"id": {f["text"]}, "turns": {f["score"]}}}}}'
    )
    return Rendered((body,))


def _mapped(f: Mapping[str, str]) -> Rendered:
    body = (
        f'{{"context": {{"sources": [{{"doc_id": {f["id"]}, "snippet": {f["text"]}, '
        f'"relevance": {f["score"]}}}]}}, "output": {{"message": {{"content": {f["answer"]}}}, '
        f'"citations": [{{"source": {f["citation"]}}}]}}, '
        f'"debug": {{"timings": {{{f["stage"]}: {f["seconds"]}}}}}}}'
    )
    return Rendered((body,))


def _sse_events(f: Mapping[str, str]) -> Rendered:
    return Rendered(
        (
            '{"delta": "it is "}',
            f'{{"delta": {f["answer"]}}}',
            f'{{"type": "final", "sources": [{{"id": {f["id"]}}}], '
            f'"citations": [{f["citation"]}], "timings": {{{f["stage"]}: {f["seconds"]}}}}}',
        )
    )


def _openai_stream(f: Mapping[str, str]) -> Rendered:
    base = '"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "rag"'
    return Rendered(
        (
            f'{{{base}, "choices": [{{"index": 0, "delta": {{"role": "assistant"}}}}]}}',
            f'{{{base}, "choices": [{{"index": 0, "delta": {{"content": {f["answer"]}}}}}]}}',
            f'{{{base}, "choices": [{{"index": 0, "delta": {{}}, "finish_reason": "stop"}}]}}',
            f'{{{base}, "choices": [], "usage": {{"prompt_tokens": {f["tokens"]}, '
            f'"completion_tokens": {f["out_tokens"]}, "total_tokens": 3}}, '
            f'"sources": [{{"id": {f["id"]}}}]}}',
        )
    )


def _usage(f: Mapping[str, str]) -> Rendered:
    body = (
        f'{{"choices": [{{"message": {{"content": {f["answer"]}}}}}], '
        f'"usage": {{"prompt_tokens": {f["tokens"]}, "completion_tokens": {f["out_tokens"]}}}, '
        f'"sources": [{{"id": {f["id"]}}}]}}'
    )
    return Rendered((body,))


def _header_bytes(literal: str) -> bytes:
    """A fragment as header bytes: decoded from its JSON literal, surrogates as CESU-8."""
    try:
        value = json.loads(literal)
    except ValueError:  # a number literal json refuses (NaN is accepted, 1e999 too)
        value = literal
    return str(value).encode("utf-8", "surrogatepass")


def _server_timing(f: Mapping[str, str]) -> Rendered:
    body = '{"answer": "it is fact0", "retrieved": [{"id": "d0"}], "citations": [1]}'
    value = (
        _header_bytes(f["stage"])
        + b";dur="
        + _header_bytes(f["seconds"])
        + b';desc="'
        + _header_bytes(f["text"])
        + b'", db;dur=2'
    )
    return Rendered((body,), {"Server-Timing": value})


def _golden(f: Mapping[str, str]) -> Rendered:
    line = (
        f'{{"id": {f["id"]}, "question": {f["answer"]}, "relevant_ids": {{{f["text"]}: '
        f'{f["score"]}}}, "expected_facts": [{f["stage"]}], "tags": [{f["citation"]}]}}'
    )
    good = '{"id": "c-ok", "question": "q", "relevant_ids": ["d0"]}'
    return Rendered((good, line))


def _golden_turns(f: Mapping[str, str]) -> Rendered:
    # the hostile fragments inside a conversation's turns: its id, each turn's question,
    # relevance, facts, scripted answer, and the conversation's tags
    line = (
        f'{{"id": {f["id"]}, "tags": [{f["citation"]}], "turns": ['
        f'{{"question": "q1", "relevant_ids": ["d0"], "assistant": {f["answer"]}}}, '
        f'{{"question": {f["answer"]}, "relevant_ids": {{{f["text"]}: {f["score"]}}}, '
        f'"expected_facts": [{f["stage"]}], "assistant": {f["text"]}}}, '
        f'{{"question": {f["stage"]}, "unanswerable": true}}]}}'
    )
    good = '{"id": "c-ok", "question": "q", "relevant_ids": ["d0"]}'
    return Rendered((good, line))


def _openslo(f: Mapping[str, str]) -> Rendered:
    """An OpenSLO v1 SLO in YAML's flow style (JSON is YAML), one fragment in a slot."""
    source = (
        f'{{"type": "evaluator", "spec": {{"sli": {f["sli"]}, '
        f'"threshold_seconds": {f["threshold"]}}}}}'
    )
    document = (
        f'{{"apiVersion": "openslo/v1", "kind": "SLO", "metadata": {{"name": {f["name"]}}}, '
        f'"spec": {{"service": {f["service"]}, "budgetingMethod": "Occurrences", '
        f'"timeWindow": [{{"duration": {f["duration"]}, "isRolling": true}}], '
        f'"objectives": [{{"target": {f["target"]}}}], "indicator": {{"metadata": '
        f'{{"name": "i"}}, "spec": {{"ratioMetric": {{"counter": true, '
        f'"good": {{"metricSource": {source}}}, "total": {{"metricSource": {source}}}}}}}}}}}}}'
    )
    return Rendered((document,))


def _slo_table(f: Mapping[str, str]) -> Rendered:
    """A ``[[slos]]`` table (TOML's basic strings read JSON's escapes), one fragment in a
    slot; TOML spells JSON's NaN and infinities in lower case."""
    toml = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}
    number = {k: toml.get(f[k], f[k]) for k in ("objective", "threshold")}
    table = (
        f'[[slos]]\nname = {f["name"]}\njob = {f["service"]}\nsli = "latency"\n'
        f"objective = {number['objective']}\nwindow = {f['duration']}\n"
        f"threshold_seconds = {number['threshold']}\n"
    )
    return Rendered((table,))


def _collector(f: Mapping[str, str]) -> Rendered:
    # an OTLP/HTTP JSON-shaped partial-success reply: what a collector may say back
    body = f'{{"partialSuccess": {{"rejectedSpans": {f["score"]}, "errorMessage": {f["answer"]}}}}}'
    return Rendered((body,))


def _judge_response(f: Mapping[str, str]) -> Rendered:
    """A chat completion whose content is one verdict fitting every check (a fact, a claim,
    a refusal). A fragment in ``reason``, ``claim`` or ``index`` sits in the content's own
    JSON (its escapes read by the second decode: JSON inside JSON); one in ``outer_reason``
    is the reason's text escaped at the body's level (read by the first decode, so the
    content holds it raw); ``tokens`` is the completion's usage."""
    reason = "@@OUTER@@" if f["outer_reason"] != "-" else f["reason"]
    inner = (
        f'{{"facts": [{{"index": {f["index"]}, "stated": true}}], '
        f'"claims": [{{"claim": {f["claim"]}, "supported": false}}], '
        f'"refusal": false, "reason": {reason}}}'
    )
    content = json.dumps(inner)  # a lone surrogate escaped in a fragment stays an escape
    if f["outer_reason"] != "-":
        content = content.replace("@@OUTER@@", f["outer_reason"].replace('"', '\\"'))
    body = (
        f'{{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{{"index": 0, '
        f'"message": {{"role": "assistant", "content": {content}}}}}], '
        f'"usage": {{"prompt_tokens": {f["tokens"]}, "completion_tokens": 20}}}}'
    )
    return Rendered((body,))


def _labels_line(f: Mapping[str, str]) -> Rendered:
    good = (
        '{"answer_hash": "0000000000000000", "at": "2026-01-01T00:00:00Z", "case_id": "c0", '
        '"check": "fact_support", "reviewer": "ann", "verdict": true}'
    )
    line = (
        f'{{"answer_hash": "0000000000000000", "at": "2026-01-01T00:00:00Z", '
        f'"case_id": {f["case_id"]}, "check": "refusal", "reviewer": {f["reviewer"]}, '
        f'"verdict": {f["verdict"]}, "note": {f["note"]}}}'
    )
    return Rendered((good, line))


def _calibration(f: Mapping[str, str]) -> Rendered:
    body = (
        f'{{"labels_file": "labels.jsonl", "reports": [], "checks": [{{"check": "fact_support",'
        f' "model": {f["model"]}, "prompt_version": "judge-prompts-2", "labels": {f["labels"]},'
        f' "agreement": 0.98, "kappa": 0.95, "kappa_interval": [0.9, 1.0],'
        f' "agreement_interval": [0.95, 1.0], "confusion": {{"human_pass_judge_pass": '
        f'{f["cell"]}, "human_pass_judge_fail": 1, "human_fail_judge_pass": 1, '
        f'"human_fail_judge_fail": 40}}, "disagreements": [{{"case_id": {f["case_id"]}, '
        f'"human": true, "judge": false}}, {{"case_id": "c2", "human": false, "judge": true}}],'
        f' "calibrated": true, "floor": {f["floor"]}, "min_labels": 50,'
        f' "uncertain": {f["uncertain"]}, "coverage": 0.9, "reviewers": {{"confusion": '
        f'{{"first_pass_second_pass": {f["second"]}, "first_pass_second_fail": 2, '
        f'"first_fail_second_pass": 3, "first_fail_second_fail": 5}}, "labels": 25, '
        f'"agreement": 0.8, "kappa": 0.525, "kappa_interval": [0.1, 0.9], '
        f'"ill_defined": {f["ill_defined"]}}}}}]}}'
    )
    return Rendered((body,))


_RETRY = "retry = { retries = 1, backoff_initial_seconds = 0.01, backoff_max_seconds = 0.02 }"
_TARGET_COMMON = f"""timeout_seconds = 8
read_timeout_seconds = 2
{_RETRY}
request.headers = {{ Authorization = "Bearer ${{FUZZ_TOKEN}}" }}
"""

SURFACES: tuple[Surface, ...] = (
    Surface(
        name="default-contract",
        delivery="target",
        blocks=(*_ALL_BLOCKS, *_TRANSPORT),
        doc="the default contract's JSON body (answer, retrieved, citations, timings)",
        slots=_BODY_SLOTS,
        defaults=_TEXT_DEFAULTS,
        render=_default_contract,
        target_toml=_TARGET_COMMON,
        skip=STREAM_ONLY,
    ),
    Surface(
        name="conversation-id",
        delivery="target",
        blocks=("unicode", "control", "secrets", "numbers", "bodies"),
        doc="a stateful service's conversation id ([targets.conversation]), sent back as a header",
        slots={"answer": "text", "id": "text", "text": "text", "score": "number"},
        defaults={**_TEXT_DEFAULTS, "text": '"session-1"'},
        render=_conversation_id,
        target_toml=_TARGET_COMMON
        + '[targets.conversation]\nid = "session.id"\nname = "X-Session"\n',
        skip=STREAM_ONLY,
        conversational=True,
    ),
    Surface(
        name="jmespath",
        delivery="target",
        blocks=(*_ALL_BLOCKS, "framing"),
        doc="a JMESPath response mapping of nested fields",
        slots=_BODY_SLOTS,
        defaults=_TEXT_DEFAULTS,
        render=_mapped,
        target_toml=_TARGET_COMMON
        + """[targets.response]
ids = "context.sources[].doc_id"
answer = "output.message.content"
citations = "output.citations[].source"
timings = "debug.timings"
texts = "context.sources[].snippet"
scores = "context.sources[].relevance"
""",
        skip=STREAM_ONLY,
    ),
    Surface(
        name="sse",
        delivery="target",
        blocks=(*_ALL_BLOCKS, *_TRANSPORT),
        doc="server-sent events: answer pieces, then a final event with the fields",
        slots={
            "answer": "text",
            "id": "text",
            "stage": "text",
            "citation": "number",
            "seconds": "number",
        },
        defaults=_TEXT_DEFAULTS,
        render=_sse_events,
        frame="sse",
        content_type="text/event-stream",
        target_toml=_TARGET_COMMON
        + """[targets.streaming]
format = "sse"
content = "delta"
fields_from = "type == 'final'"
done = "[DONE]"
[targets.response]
ids = "sources[].id"
citations = "citations"
timings = "timings"
""",
    ),
    Surface(
        name="ndjson",
        delivery="target",
        blocks=(*_ALL_BLOCKS, *_TRANSPORT),
        doc="NDJSON events: one JSON object per line",
        slots={
            "answer": "text",
            "id": "text",
            "stage": "text",
            "citation": "number",
            "seconds": "number",
        },
        defaults=_TEXT_DEFAULTS,
        render=_sse_events,
        frame="ndjson",
        content_type="application/x-ndjson",
        target_toml=_TARGET_COMMON
        + """[targets.streaming]
format = "ndjson"
content = "delta"
fields_from = "type == 'final'"
[targets.response]
ids = "sources[].id"
citations = "citations"
timings = "timings"
""",
    ),
    Surface(
        name="openai-stream",
        delivery="target",
        blocks=(*_ALL_BLOCKS, *_TRANSPORT),
        doc="the openai-chat preset streamed: delta chunks, usage chunk, [DONE]",
        slots={"answer": "text", "id": "text", "tokens": "number", "out_tokens": "number"},
        defaults=_TEXT_DEFAULTS,
        render=_openai_stream,
        frame="sse",
        content_type="text/event-stream",
        target_toml='kind = "openai-chat"\nmodel = "rag"\nstream = true\n'
        + _TARGET_COMMON
        + '[targets.response]\nids = "sources[].id"\n'
        + "[targets.prices]\ninput_per_1k = 0.5\noutput_per_1k = 1.5\n",
    ),
    Surface(
        name="usage-cost",
        delivery="target",
        blocks=("unicode", "control", "numbers", "bodies"),
        doc="token usage and cost: the openai-chat preset's usage with prices",
        slots={"answer": "text", "id": "text", "tokens": "number", "out_tokens": "number"},
        defaults=_TEXT_DEFAULTS,
        render=_usage,
        target_toml='kind = "openai-chat"\nmodel = "rag"\n'
        + _TARGET_COMMON
        + '[targets.response]\nids = "sources[].id"\n'
        + "[targets.prices]\ninput_per_1k = 0.5\noutput_per_1k = 1.5\n",
        skip=STREAM_ONLY,
    ),
    Surface(
        name="server-timing",
        delivery="target",
        blocks=("unicode", "control", "secrets", "numbers"),
        doc="a Server-Timing response header: stage names, durations, descriptions",
        slots={"stage": "text", "text": "text", "seconds": "number"},
        defaults={**_TEXT_DEFAULTS, "seconds": "12.5"},
        render=_server_timing,
        frame="header",
        target_toml=_TARGET_COMMON,
    ),
    Surface(
        name="collector",
        delivery="collector",
        blocks=("control", "numbers", "bodies", "timing", "sizes"),
        doc="an OTLP collector's reply to evaluator run's span export",
        slots={"answer": "text", "score": "number"},
        defaults={"answer": '"ok"', "score": "0"},
        render=_collector,
        skip=STREAM_ONLY,
    ),
    Surface(
        name="golden",
        delivery="golden",
        blocks=("unicode", "control", "numbers", "bodies", "normalisation"),
        doc="a golden-set line read by evaluator validate",
        slots={
            "id": "text",
            "answer": "text",
            "text": "text",
            "stage": "text",
            "citation": "text",
            "score": "number",
        },
        defaults={
            "id": '"c1"',
            "answer": '"q1"',
            "text": '"d0"',
            "stage": '"fact0"',
            "citation": '"tag"',
            "score": "1",
        },
        render=_golden,
    ),
    Surface(
        name="golden-turns",
        delivery="golden",
        blocks=("unicode", "control", "numbers", "bodies", "normalisation"),
        doc="a conversation's turns in a golden set, read by evaluator validate and run",
        slots={
            "id": "text",
            "answer": "text",
            "text": "text",
            "stage": "text",
            "citation": "text",
            "score": "number",
        },
        defaults={
            "id": '"c1"',
            "answer": '"q1"',
            "text": '"d0"',
            "stage": '"fact0"',
            "citation": '"tag"',
            "score": "1",
        },
        render=_golden_turns,
    ),
    Surface(
        name="report",
        delivery="report",
        blocks=("unicode", "control", "numbers", "bodies"),
        doc="a candidate report fed to evaluator gate (case ids, scores, costs, summary values)",
        slots={
            "case_id": "text",
            "run_id": "text",
            "mrr": "number",
            "recall": "number",
            "latency": "number",
            "n_cases": "number",
            "cost": "number",
        },
        defaults={},
        render=lambda f: Rendered(()),  # the report is rendered from a real one (the test)
    ),
    Surface(
        name="openslo",
        delivery="openslo",
        blocks=("unicode", "control", "numbers", "bodies", "normalisation"),
        doc="an OpenSLO v1 file read by evaluator check (names, durations, targets, the SLI)",
        slots={
            "name": "text",
            "service": "text",
            "duration": "text",
            "sli": "text",
            "target": "number",
            "threshold": "number",
        },
        defaults={
            "name": '"answers"',
            "service": '"t"',
            "duration": '"28d"',
            "sli": '"latency"',
            "target": "0.99",
            "threshold": "2.5",
        },
        render=_openslo,
    ),
    Surface(
        name="slo-table",
        delivery="slo_config",
        blocks=("unicode", "control", "numbers"),
        doc="a [[slos]] table read by evaluator check (name, job, window, objective, threshold)",
        slots={
            "name": "text",
            "service": "text",
            "duration": "text",
            "objective": "number",
            "threshold": "number",
        },
        defaults={
            "name": '"answers"',
            "service": '"t"',
            "duration": '"28d"',
            "objective": "0.99",
            "threshold": "2.5",
        },
        render=_slo_table,
    ),
    Surface(
        name="judge-response",
        delivery="judge",
        blocks=(*_ALL_BLOCKS, "framing", "timing"),
        doc="an LLM judge's chat completion: the verdict's reason (escaped in the content or "
        "in the body), claims and fact index, its usage",
        slots={
            "reason": "text",
            "claim": "text",
            "outer_reason": "text",
            "index": "number",
            "tokens": "number",
        },
        defaults={
            "reason": '"found"',
            "claim": '"a claim"',
            "outer_reason": "-",
            "index": "0",
            "tokens": "100",
        },
        render=_judge_response,
        skip=STREAM_ONLY,
    ),
    Surface(
        name="labels",
        delivery="labels",
        blocks=("unicode", "control", "numbers", "bodies"),
        doc="a human labels file (JSONL) read by evaluator calibrate and evaluator review",
        slots={"case_id": "text", "reviewer": "text", "note": "text", "verdict": "number"},
        defaults={"case_id": '"c1"', "reviewer": '"bob"', "note": '"n"', "verdict": "false"},
        render=_labels_line,
    ),
    Surface(
        name="calibration",
        delivery="calibration",
        blocks=("unicode", "control", "numbers", "bodies"),
        doc="the stored calibration evaluator gate reads for its judged rules (with the "
        "coverage and the reviewers' overlap table)",
        slots={
            "model": "text",
            "case_id": "text",
            "labels": "number",
            "cell": "number",
            "floor": "number",
            "uncertain": "number",
            "second": "number",
            "ill_defined": "number",
        },
        defaults={
            "model": '"m"',
            "case_id": '"c1"',
            "labels": "100",
            "cell": "58",
            "floor": "0.6",
            "uncertain": "0",
            "second": "15",
            "ill_defined": "true",
        },
        render=_calibration,
    ),
    Surface(
        name="config",
        delivery="config",
        blocks=("unicode", "control", "numbers"),
        doc="config values: a target's and the judge's header value via ${ENV}, the judge's "
        "url (its port), numbers via EVALUATOR_* and TOML",
        slots={
            "header": "text",
            "judge_header": "text",
            "judge_url": "text",
            "k_env": "number",
            "timeout_toml": "number",
        },
        defaults={},
        render=lambda f: Rendered(()),  # the config is written by the test
    ),
)


MiB = 1024 * 1024


@functools.cache
def _gzip_bomb() -> bytes:
    """256 MiB of zeros, gzipped (about 256 KB), as a whole HTTP response."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = b"".join([*(squeeze.compress(bytes(MiB)) for _ in range(256)), squeeze.flush()])
    return http_response(body, {"Content-Encoding": "gzip", "Content-Type": "application/json"})


@functools.cache
def _sizes_block() -> Block:
    """Whole collector replies beyond any sane size, cheap to serve: the same 1 MiB piece
    written again and again, or a small gzip bomb."""
    mib = b"x" * MiB
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nConnection: close\r\n"
    return Block(
        "sizes",
        "body",
        {
            "256MiB-declared": lambda r: (
                [(0.0, head + b"Content-Length: 268435456\r\n\r\n")] + [(0.0, mib)] * 256
            ),
            "256MiB-close-delimited": lambda r: [(0.0, head + b"\r\n")] + [(0.0, mib)] * 256,
            "gzip-bomb": lambda r: [(0.0, _gzip_bomb())],
            "500-with-3MB-body": lambda r: [
                (0.0, b"HTTP/1.1 500 Oops\r\nContent-Length: 3000000\r\nConnection: close\r\n\r\n"),
                (0.0, b"E" * 3_000_000),
            ],
        },
        "collector replies of 256 MiB (declared and close-delimited), a gzip bomb, a 3 MB "
        "error body",
    )


def _block(name: str) -> Block:
    if name == "sizes":
        return _sizes_block()
    return blocks.by_name(name)


# --- assembling a response ------------------------------------------------------------------


def _stream_bytes(events: Sequence[str], frame: Frame, framing: Framing) -> bytes:
    nl = framing.newline
    if frame == "sse":
        one = "".join(f"data: {e}{nl}{nl}" for e in events[:-1])
        text = one * max(framing.events - 1, 0) + "".join(f"data: {e}{nl}{nl}" for e in events)
        if framing.done:
            text += f"data: [DONE]{nl}{nl}"
    elif frame == "ndjson":
        one = "".join(f"{e}{nl}" for e in events[:-1])
        text = one * max(framing.events - 1, 0) + "".join(f"{e}{nl}" for e in events)
        if not framing.done:
            text = text.rstrip(nl)
    else:
        text = events[0]
    # a lone surrogate escaped in JSON (\ud83d) stays an escape: the bytes are ASCII there
    return text.encode("utf-8", "surrogatepass")


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def http_pieces(
    body: bytes,
    content_type: str,
    headers: Mapping[str, bytes],
    framing: Framing,
    timing: Timing,
) -> list[Piece]:
    """The response as pieces for :class:`~tests.support.rawhttp.ScriptedRawServer`."""
    if framing.bom:
        body = b"\xef\xbb\xbf" + body
    head = [b"HTTP/1.1 200 OK", f"Content-Type: {content_type}".encode(), b"Connection: close"]
    head += [name.encode() + b": " + value for name, value in headers.items()]
    sent = body
    if framing.transfer == "chunked":
        head.append(b"Transfer-Encoding: chunked")
        parts = _cut(body, framing.piece or 1024)
        sent = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"
    elif framing.transfer == "short":
        head.append(b"Content-Length: %d" % (len(body) + 100))
    elif framing.transfer == "length":
        head.append(b"Content-Length: %d" % len(body))
    if framing.truncate:
        sent = sent[: int(len(sent) * (1 - framing.truncate))]
    pieces: list[Piece] = [(timing.before_head, b"\r\n".join(head) + b"\r\n\r\n")]
    size = timing.piece or (framing.piece if framing.transfer != "chunked" else 0)
    parts = _cut(sent, size) if size else [sent]
    pause = timing.every
    for i, part in enumerate(parts):
        if timing.stall and i == len(parts) // 2:
            pieces.append((timing.stall, b"<hold>"))
        pieces.append((pause if i else 0.0, part))
    if timing.stall and len(parts) == 1:
        pieces.append((timing.stall, b"<hold>"))
    if framing.hold_after:
        pieces.append((framing.hold_after, b"<hold>"))
    return pieces


# --- generating -----------------------------------------------------------------------------


def _fill(
    surface: Surface, kind: str, rng: random.Random, value: str
) -> tuple[str, dict[str, str]]:
    slots = sorted(s for s, k in surface.slots.items() if k == kind)
    slot = rng.choice(slots)
    fill = dict(surface.defaults)
    fill[slot] = value
    return slot, fill


def _file_data(
    surface: Surface, block: Block, value: object, events: tuple[str, ...]
) -> bytes | None:
    """The file a file-delivered surface reads (a golden set, labels, an SLO file, a stored
    calibration, a report, a config); None for a surface delivered over HTTP."""
    if surface.delivery in ("golden", "labels"):
        if block.kind == "body":
            assert isinstance(value, bytes)
            return events[0].encode() + b"\n" + value + b"\n"
        return "".join(e + "\n" for e in events).encode("utf-8", "surrogatepass")
    if surface.delivery in ("openslo", "slo_config"):
        if block.kind == "body":
            assert isinstance(value, bytes)
            return value
        return events[0].encode("utf-8", "surrogatepass")
    if surface.delivery == "calibration":
        return value if isinstance(value, bytes) else events[0].encode("utf-8", "surrogatepass")
    if surface.delivery in ("report", "config"):
        return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
    return None


def build(surface: Surface, block: Block, variant: str, seed: int) -> Attack:
    """The attack of ``variant`` of ``block`` on ``surface`` for ``seed``."""
    rng = random.Random(f"{seed}:{surface.name}:{block.name}:{variant}")
    value = block.variants[variant](rng)
    framing, timing, slot = Framing(), Timing(), "-"
    if block.kind in ("text", "number"):
        assert isinstance(value, str)
        slot, fill = _fill(surface, block.kind, rng, value)
        rendered = surface.render(fill)
    else:
        rendered = surface.render(dict(surface.defaults))
    if isinstance(value, Framing):
        framing, slot = value, "transport"
    elif isinstance(value, Timing):
        timing, slot = value, "transport"
    events = rendered.events
    if block.kind == "body" and block.name != "sizes":
        assert isinstance(value, bytes)
        slot = "body"
        if surface.frame in ("sse", "ndjson"):  # the hostile body as one event among good ones
            events = (events[0], value.decode("utf-8", "surrogateescape"), *events[1:])
    if block.name == "sizes":
        assert isinstance(value, list)
        return Attack(surface, block.name, variant, "response", seed, pieces=tuple(value))
    file_data = _file_data(surface, block, value, events)
    if file_data is not None:
        return Attack(surface, block.name, variant, slot, seed, data=file_data)
    if block.kind == "body" and surface.frame not in ("sse", "ndjson"):
        assert isinstance(value, bytes)
        body = value
    else:
        body = _stream_bytes(events, surface.frame, framing)
    pieces = http_pieces(body, surface.content_type, rendered.headers, framing, timing)
    return Attack(surface, block.name, variant, slot, seed, pieces=tuple(pieces))


#: attacks of issue 24 that once got through, in every round whatever the draw
PINNED = frozenset(
    {
        "default-contract.unicode.lone-high-surrogate",
        "sse.unicode.lone-high-surrogate",
        "default-contract.normalisation.fdfa-expands-18x",
        "usage-cost.numbers.1e308",
        "openai-stream.numbers.1e308",
        "sse.framing.tiny-events",
        "sse.framing.done-then-open",
        "openai-stream.framing.done-then-open",
        "golden.control.forged-verdict-line",
        "golden.bodies.depth-100k",
        "report.control.forged-verdict-line",
        "report.numbers.over-int-digit-limit",
        "config.control.forged-verdict-line",
        "collector.sizes.256MiB-declared",
        "collector.sizes.gzip-bomb",
        "collector.timing.trickle",
        # issue 38: alternating combining marks stalled /healthz for seconds; a lone
        # surrogate in a judge's reason was an internal error of `run`
        "default-contract.unicode.alternating-marks",
        "golden.unicode.alternating-marks",
        "judge-response.unicode.lone-high-surrogate",
        "judge-response.control.forged-verdict-line",
        "labels.control.forged-verdict-line",
        "calibration.control.forged-verdict-line",
    }
)


def generate(seed: int, per_pair: int = 2, delivery: Delivery | None = None) -> list[Attack]:
    """``per_pair`` attacks for every (surface, block) pair, variants drawn without
    replacement, plus the :data:`PINNED` ones; ``per_pair`` 0 takes every variant."""
    attacks = []
    for surface in SURFACES:
        if delivery is not None and surface.delivery != delivery:
            continue
        for name in surface.blocks:
            block = _block(name)
            names = sorted(v for v in block.variants if v not in surface.skip)
            rng = random.Random(f"{seed}:{surface.name}:{block.name}")
            chosen = names if per_pair <= 0 else rng.sample(names, min(per_pair, len(names)))
            pinned = [v for v in names if f"{surface.name}.{name}.{v}" in PINNED]
            chosen = [*chosen, *(v for v in pinned if v not in chosen)]
            attacks += [build(surface, block, v, seed) for v in chosen]
    return attacks


# --- attacks today's code is known to fail ----------------------------------------------------

#: ``fnmatch`` pattern of ``Attack.id`` (or of ``<class>:<invariant>`` for a daemon-wide
#: invariant) -> the branch that fixes it. Each generated case matching a pattern is marked
#: ``xfail(strict=False)``: delete an entry when its fix is merged.
_BORDER = "open in issue 24: "
KNOWN_FAILURES: dict[str, str] = {}


def known_failure(key: str) -> str | None:
    """The reason ``key`` is expected to fail, or None."""
    for pattern, reason in KNOWN_FAILURES.items():
        if fnmatch.fnmatchcase(key, pattern):
            return reason
    return None


# --- how much to run ------------------------------------------------------------------------


def seeds() -> list[int]:
    """``FUZZ_SEED`` (default 0) and the ``FUZZ_ROUNDS`` - 1 seeds after it (default 1
    round): `make test` runs seed 0, `make fuzz` more rounds from a fresh seed."""
    first = int(os.environ.get("FUZZ_SEED", "0"))
    return [first + i for i in range(int(os.environ.get("FUZZ_ROUNDS", "1")))]


def per_pair() -> int:
    """Variants per (surface, block) pair and round: ``FUZZ_PER_PAIR``, default 2, 0 all."""
    return int(os.environ.get("FUZZ_PER_PAIR", "2"))


def attacks_for(delivery: Delivery) -> list[Attack]:
    """Every attack of this run for ``delivery``, over every seed, grouped by (seed,
    block) so one daemon serves each group."""
    found = [a for seed in seeds() for a in generate(seed, per_pair(), delivery)]
    return sorted(found, key=lambda a: (a.seed, a.block))
