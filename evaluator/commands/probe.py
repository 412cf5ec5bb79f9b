"""``evaluator probe``: one question to a target; shows the request, the raw response and the
fields the mapping found in it, to get a ``[targets.response]`` mapping right in a minute.

Exit 0 when the call worked and every mapped field was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import textwrap
from dataclasses import dataclass

from evaluator import border
from evaluator.commands.common import target_from_flags
from evaluator.commands.flags import CommonOptions
from evaluator.commands.notices import warn
from evaluator.commands.target_warnings import citations_warning, markers_warning, unit_lie
from evaluator.config import CallableTargetConfig, Settings, TargetConfig, load_settings
from evaluator.dataset import load_dataset
from evaluator.errors import ConfigError, EvaluatorError, ExitCode, TargetError
from evaluator.factory import build_http_target, build_target
from evaluator.models import Case, TargetResponse
from evaluator.redaction import redactor
from evaluator.targets.http import HttpTarget, ProbeResult
from evaluator.targets.mapping import FIELDS, ResponseMapper

__all__ = ["Options", "configure", "handle"]


@dataclass(frozen=True)
class Options(CommonOptions):
    question: str | None
    dataset: str | None
    target_url: str | None
    target: str | None
    target_config: str | None
    name: str | None
    job: str | None
    k: int | None
    max_chars: int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--question", metavar="TEXT", help="question to send")
    parser.add_argument(
        "--dataset", metavar="FILE", help="golden set whose first case is sent (no --question)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--target-url", metavar="URL", help="RAG endpoint (default contract)")
    group.add_argument("--target", metavar="MODULE:FUNCTION", help="in-process Python target")
    group.add_argument(
        "--target-config", metavar="FILE", help="TOML file with [[targets]] (default: --config)"
    )
    parser.add_argument(
        "--name", metavar="NAME", help="which configured target (default: the job's, or the first)"
    )
    parser.add_argument("--job", metavar="NAME", help="the configured job whose target is probed")
    parser.add_argument("--k", type=int, metavar="N", help="K sent with the question")
    parser.add_argument(
        "--max-chars", type=int, default=2000, metavar="N", help="raw response shown up to N chars"
    )


def _pick_target(settings: Settings, options: Options) -> tuple[TargetConfig, str | None]:
    """The target to probe, and the golden set of its job when there is one."""
    if options.name is not None:
        for target in settings.targets:
            if target.label == options.name:
                return target, None
        known = sorted(t.label for t in settings.targets)
        raise ConfigError(f"no target named {options.name!r}; known: {known}")
    if options.job is not None or settings.jobs:
        job = settings.job(options.job)
        return settings.target(job.target), str(job.dataset)
    if settings.targets:
        return settings.targets[0], None
    raise ConfigError(
        "no target to probe: pass --target-url URL, --target MODULE:FUNCTION, "
        "--target-config FILE or a --config with [[targets]]"
    )


def _resolve(options: Options) -> tuple[TargetConfig, Case, int]:
    settings = load_settings(options.target_config or options.config)
    dataset: str | None = options.dataset
    if options.target_url is not None or options.target is not None:
        target = target_from_flags(options.target_url, options.target)
    else:
        target, job_dataset = _pick_target(settings, options)
        dataset = dataset or job_dataset
    if options.question is not None:
        case = Case(id="probe", question=options.question, relevance={})
    elif dataset is not None:
        cases = load_dataset(dataset).questions
        if not cases:
            raise ConfigError(f"{dataset}: no case to take a question from")
        case = cases[0]
    else:
        raise ConfigError("nothing to ask: pass --question TEXT or --dataset FILE")
    k = options.k if options.k is not None else settings.k
    if k < 1:
        raise ConfigError(f"--k {k}: must be at least 1")
    return target, case, k


async def _probe(config: TargetConfig, case: Case, k: int) -> tuple[ProbeResult, HttpTarget | None]:
    if not isinstance(config, CallableTargetConfig):
        http = build_http_target(config)
        try:
            return await http.probe(case, k), http
        finally:
            await http.aclose()
    target = build_target(config)
    try:
        result = ProbeResult(request=f"{config.callable}(case, {k})")
        try:
            result.response = await target.query(case, k)
        except TargetError as exc:
            result.error = exc
        return result, None
    finally:
        await target.aclose()


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ", lambda _line: True)


def _raw(body: bytes, max_chars: int) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        # through the border: nesting bounded (100,000 levels were an internal
        # RecursionError), and what JSON leaves raw (NEL, U+2028) escaped for the terminal
        text = border.json_line(json.dumps(border.loads(text), ensure_ascii=False, indent=2))
    except ValueError:  # not JSON (or nested beyond the bound): shown as it came, each line
        # printable (a \x1b[2J in a body cannot clear the screen)
        text = "\n".join(map(border.printable, text.split("\n")))
    # after pretty-printing (a "\u0074ok" escape is a token again once decoded), and
    # before the cut (half a token would no longer be recognised by stdout's redaction)
    text = redactor().redact_text(text)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n... ({len(text) - max_chars} more characters)"
    return text


def _values(response: TargetResponse) -> dict[str, object]:
    """Each field of the response as the mapping read it."""
    delivery = response.delivery
    return {
        "ids": list(response.ranked_ids),
        "answer": response.answer,
        "citations": list(response.citations),
        "timings": dict(response.timings),
        "texts": [r.text for r in response.retrieved],
        "scores": [r.score for r in response.retrieved],
        "input_tokens": delivery.input_tokens if delivery else None,
        "output_tokens": delivery.output_tokens if delivery else None,
    }


def _source(name: str, mapper: ResponseMapper | None) -> str | None:
    """Where a field was read from: the default contract, its mapped expression (and the
    citation markers in the answer); None when it is not mapped."""
    if mapper is None:
        return "(default contract)"
    if name == "citations" and mapper.markers is not None:
        sources = [f"markers {mapper.markers.style!r} in the answer"]
        if "citations" in mapper:
            sources.insert(0, mapper.expressions["citations"].expression)
        return " + ".join(sources)
    if name in mapper:
        return mapper.expressions[name].expression
    return None


def _shown(value: object) -> str:
    """A field's value on one line, redacted, cut at 300 characters."""
    shown = redactor().redact_text(border.json_line(json.dumps(value, ensure_ascii=False)))
    return shown[:300] + "..." if len(shown) > 300 else shown


def _mapped(response: TargetResponse, target: HttpTarget | None) -> list[str]:
    """Each field, where it was read from and what it held; a streamed answer's first token
    and token count."""
    values = _values(response)
    mapper = target.mapper if target is not None else None
    lines = []
    for name in FIELDS:
        if name.endswith("_tokens") and (mapper is None or name not in mapper):
            continue  # usage is for cost: not worth a line where nobody mapped it
        source = _source(name, mapper)
        if source is None:
            lines.append(f"{name:<10} (not mapped)")
            continue
        lines.append(f"{name:<10} {source}\n{'':<10} -> {_shown(values[name])}")
    delivery = response.delivery
    if delivery is not None and delivery.streamed:
        ttft = "n/a" if delivery.ttft_seconds is None else f"{delivery.ttft_seconds:.3f}s"
        lines.append(f"{'stream':<10} first token after {ttft}, {delivery.output_tokens} tokens")
    return lines


def _warnings(config: TargetConfig, response: TargetResponse, seconds: float) -> list[str]:
    """What the one response reveals about the configuration: unmapped citations, stage
    timings that cannot be seconds."""
    out = []
    unmapped = citations_warning(config)
    if unmapped is not None:
        out.append(unmapped)
    missed = markers_warning(config, [response.answer])
    if missed is not None:
        out.append(missed)
    lie = unit_lie(response.timings, seconds)
    if lie is not None:
        stage, value = lie
        out.append(
            f"stage {stage!r} took {value:g}s in a {seconds:.3f}s response: these look like "
            f'milliseconds: set timings_unit = "milliseconds" in [targets.response]'
        )
    return out


def handle(options: Options) -> int:
    config, case, k = _resolve(options)
    result, target = asyncio.run(_probe(config, case, k))
    print(f"target: {config.label}")
    print(f"question: {case.question}  (k={k})")
    print("\nrequest sent:")
    print(_indent(result.request))
    if result.status is not None:
        print(
            f"\nresponse: HTTP {result.status} in {result.seconds:.3f}s, {len(result.body)} bytes"
        )
        if result.body:
            print(_indent(_raw(result.body, options.max_chars)))
    if result.response is not None:
        print("\nmapped fields:")
        print(_indent("\n".join(_mapped(result.response, target))))
        if target is not None and target.retrieval_only:
            print("\nretrieval-only target: answers and citations will not be scored")
        # warnings on stderr, as `run` writes them: stdout is the probe's own display
        if not result.response.ranked_ids:
            warn("no ids found; check that the ids expression matches a hit list")
        for warning in _warnings(config, result.response, result.seconds):
            warn(warning)
    if result.error is not None:
        raise EvaluatorError(f"probe failed ({result.error.kind}): {result.error.message}")
    print("\nmapping ok")
    return ExitCode.OK
