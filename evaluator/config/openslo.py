"""OpenSLO v1 files: the subset that maps onto evaluator's SLIs, read into ``[[slos]]``.

An OpenSLO file is YAML, one or more documents. What is read (everything else is an error
naming the field, so a spec is never half understood)::

    apiVersion: openslo/v1
    kind: SLO
    metadata:
      name: answers                    # -> name
    spec:
      service: ref                     # -> job (a job's name, its target, target/dataset)
      budgetingMethod: Occurrences     # events are cases: the only method that fits
      timeWindow:
        - duration: 28d                # -> window
          isRolling: true
      objectives:
        - target: 0.99                 # -> objective (or targetPercent: 99)
      indicator:                       # or indicatorRef: the name of a kind: SLI document
        metadata:
          name: answer-correct
        spec:
          ratioMetric:
            counter: true
            good:                      # or bad
              metricSource:
                type: evaluator
                spec:
                  sli: answer_correct  # + threshold_seconds, check, as in [[slos]]
            total:
              metricSource:
                type: evaluator
                spec:
                  sli: answer_correct

``kind: Service`` documents are accepted and change nothing; displayName, description,
labels and annotations are accepted and not used. Alert policies, conditions and
notification targets are refused: ``evaluator slo rules`` writes the alerts.

The file is outside input: read within :data:`evaluator.border.MAX_SETTINGS_BYTES`, parsed
by PyYAML's safe loader (libyaml's), each document's nodes checked before it is built:
aliases refused (a few lines of them expand to billions of nodes once walked), the node
count capped, nesting capped by libyaml's scanner.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evaluator import border
from evaluator.config.slo import SloConfig
from evaluator.errors import ConfigError

__all__ = ["MAX_DOCUMENTS", "MAX_NODES", "OpenSlo", "read_openslo"]

#: documents and YAML nodes one file may hold: far beyond any SLO file, far below a bomb
MAX_DOCUMENTS = 1000
MAX_NODES = 200_000

_METADATA = {"name", "displayName", "labels", "annotations"}
_SLO_SPEC = {
    "service",
    "description",
    "indicator",
    "indicatorRef",
    "timeWindow",
    "budgetingMethod",
    "objectives",
}
_REFUSED = {
    "alertPolicies": "alert policies are not read: `evaluator slo rules` writes the alerts",
}
_KINDS_REFUSED = {
    "AlertPolicy",
    "AlertCondition",
    "AlertNotificationTarget",
    "DataSource",
}
_KNOWN_KINDS = {"SLO", "SLI", "Service", *_KINDS_REFUSED}
_SOURCE_KEYS = {"sli", "threshold_seconds", "check"}
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}")


def _shown(value: object) -> str:
    """A value from the file in a message: its repr (control characters escaped), cut."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Problem(Exception):
    """A field of a document that cannot be read: where (an OpenSLO path) and why."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)


#: libyaml's loader when PyYAML has it (its wheels do): 20 times faster, and its scanner
#: refuses nesting deeper than 1,000 levels; the pure-Python one otherwise
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_graph(root: yaml.Node) -> None:
    """Refuse a node reached twice (an alias: a few lines of them are billions of nodes
    once walked) and a document of more than :data:`MAX_NODES` nodes."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise yaml.YAMLError("anchors and aliases are not accepted in an SLO file")
        seen.add(id(node))
        if len(seen) > MAX_NODES:
            raise yaml.YAMLError(f"more than {MAX_NODES} YAML nodes")
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(child for pair in node.value for child in pair)


def _load_all(text: str) -> list[Any]:
    """The documents of ``text``, each node graph checked before it is built."""
    loader = _Loader(text)
    documents: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            _check_graph(node)
            documents.append(loader.construct_document(node))
            if len(documents) > MAX_DOCUMENTS:
                raise yaml.YAMLError(f"more than {MAX_DOCUMENTS} documents")
    finally:
        loader.dispose()
    return documents


@dataclass(frozen=True, slots=True)
class OpenSlo:
    """One SLO read from a file, and where each of its settings was written there."""

    slo: SloConfig
    source: str
    #: SloConfig field -> its OpenSLO path (``spec.objectives[0].target``)
    fields: Mapping[str, str]

    def where(self, field: str) -> str:
        """A field of this SLO as the user wrote it: the file, the document, the path."""
        return f"{self.source}: {self.fields.get(field, field)}"


def _documents(path: Path) -> list[Any]:
    try:
        text = border.read_file(path, border.MAX_SETTINGS_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read OpenSLO file {path}: {exc}") from exc
    try:
        documents = _load_all(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        # ValueError: an integer beyond Python's digit limit; RecursionError: nesting
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ConfigError(f"{path}: invalid YAML: {' '.join(what.split())[:300]}") from None
    return [d for d in documents if d is not None]


def _table(value: object, where: str, known: set[str] | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Problem(where, "expected a mapping")
    for key in value:
        if not isinstance(key, str):
            raise _Problem(where, "keys are strings")
        if key in _REFUSED:
            raise _Problem(_at(where, key), _REFUSED[key])
        if known is not None and key not in known:
            raise _Problem(_at(where, key), "not read by evaluator (docs/slo.md lists the subset)")
    return value


def _at(where: str, key: str | int) -> str:
    """The path of ``key`` under ``where``; a key that is not a plain name is quoted."""
    if isinstance(key, int) or not _PLAIN_KEY.fullmatch(key):
        return f"{where}[{key if isinstance(key, int) else _shown(key)}]"
    return f"{where}.{key}" if where else key


def _one(value: object, where: str) -> Any:
    if not isinstance(value, list) or len(value) != 1:
        raise _Problem(where, "exactly one entry is read")
    return value[0]


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _Problem(where, "expected a string")
    return value


def _source(metric: object, where: str) -> dict[str, Any]:
    """A ratio's side: ``metricSource`` of type ``evaluator``, its spec an SLI choice."""
    side = _table(metric, where, {"metricSource"})
    source = _table(side.get("metricSource"), _at(where, "metricSource"), {"type", "spec"})
    kind = source.get("type")
    if kind != "evaluator":
        raise _Problem(
            _at(_at(where, "metricSource"), "type"),
            f"{_shown(kind)}: only 'evaluator' (its SLIs count cases; a query is not read)",
        )
    return _table(source.get("spec"), _at(_at(where, "metricSource"), "spec"), _SOURCE_KEYS)


def _ratio(indicator: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The SLI choice of an indicator's spec, and where each of its keys was written."""
    spec = _table(indicator.get("spec"), _at(where, "spec"), {"description", "ratioMetric"})
    at = _at(_at(where, "spec"), "ratioMetric")
    if "ratioMetric" not in spec:
        raise _Problem(at, "missing: only ratioMetric indicators are read (good or bad / total)")
    ratio = _table(spec["ratioMetric"], at, {"counter", "good", "bad", "total"})
    if ratio.get("counter", True) is not True:
        raise _Problem(_at(at, "counter"), "only counters: evaluator counts events")
    sides = [s for s in ("good", "bad") if s in ratio]
    if len(sides) != 1 or "total" not in ratio:
        raise _Problem(at, "needs total and one of good or bad")
    side = _at(at, sides[0])
    chosen = _source(ratio[sides[0]], side)
    total = _source(ratio["total"], _at(at, "total"))
    if total.get("sli", chosen.get("sli")) != chosen.get("sli"):
        raise _Problem(_at(at, "total"), "names another sli than " + sides[0])
    spec_at = _at(_at(side, "metricSource"), "spec")
    return chosen, {key: _at(spec_at, key) for key in _SOURCE_KEYS}


def _objective(spec: dict[str, Any], where: str) -> tuple[object, str]:
    at = _at(where, "objectives")
    objective = _table(
        _one(spec.get("objectives"), at), _at(at, 0), {"displayName", "target", "targetPercent"}
    )
    at = _at(at, 0)
    if ("target" in objective) == ("targetPercent" in objective):
        raise _Problem(at, "needs target (0 to 1) or targetPercent (0 to 100)")
    if "target" in objective:
        return objective["target"], _at(at, "target")
    percent = objective["targetPercent"]
    if not isinstance(percent, int | float) or isinstance(percent, bool):
        raise _Problem(_at(at, "targetPercent"), "expected a number")
    return percent / 100, _at(at, "targetPercent")


def _window(spec: dict[str, Any], where: str) -> tuple[str, str]:
    at = _at(where, "timeWindow")
    window = _table(_one(spec.get("timeWindow"), at), _at(at, 0), {"duration", "isRolling"})
    at = _at(at, 0)
    if window.get("isRolling") is not True:
        raise _Problem(_at(at, "isRolling"), "only rolling windows (isRolling: true)")
    return _text(window.get("duration"), _at(at, "duration")), _at(at, "duration")


class _File:
    """One file's documents: the SLI documents by name, then each SLO read."""

    def __init__(self, path: Path, documents: list[Any]) -> None:
        self.path = path
        self.documents = documents
        #: the kind: SLI documents by name, for an SLO's indicatorRef
        self.indicators: dict[str, tuple[dict[str, Any], str]] = {}

    def label(self, index: int, document: object) -> str:
        name = ""
        if isinstance(document, dict) and isinstance(document.get("metadata"), dict):
            found = document["metadata"].get("name")
            kind = document.get("kind")
            shown = kind if kind in _KNOWN_KINDS else _shown(kind)
            name = f" ({shown} {_shown(found)})" if isinstance(found, str) else ""
        return f"{self.path}: document {index + 1}{name}"

    def read(self) -> list[OpenSlo]:
        kinds: list[str] = []
        for index, document in enumerate(self.documents):
            kinds.append(self._check_head(index, document))
            if kinds[-1] == "SLI":
                name = _text(document["metadata"].get("name"), "metadata.name")
                self.indicators[name] = (document, self.label(index, document))
        return [
            self._slo(index, document)
            for index, document in enumerate(self.documents)
            if kinds[index] == "SLO"
        ]

    def _check_head(self, index: int, document: object) -> str:
        try:
            head = _table(document, "")
            if head.get("apiVersion") != "openslo/v1":
                raise _Problem("apiVersion", f"{_shown(head.get('apiVersion'))}: only openslo/v1")
            kind = head.get("kind")
            if kind in _KINDS_REFUSED:
                raise _Problem("kind", f"{kind}: not read; `evaluator slo rules` writes alerts")
            if kind not in ("SLO", "SLI", "Service"):
                raise _Problem("kind", f"{_shown(kind)}: only SLO, SLI and Service are read")
            _table(head.get("metadata"), "metadata", _METADATA)
            _table(head, "", {"apiVersion", "kind", "metadata", "spec"})
            return str(kind)
        except _Problem as exc:
            label = self.label(index, document)
            raise ConfigError(f"invalid configuration: {label}: {exc}") from None

    def _slo(self, index: int, document: dict[str, Any]) -> OpenSlo:
        source = self.label(index, document)
        try:
            values, fields = self._values(document)
        except _Problem as exc:
            raise ConfigError(f"invalid configuration: {source}: {exc}") from None
        try:
            slo = SloConfig.model_validate(values)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field = str(error["loc"][0]) if error["loc"] else "name"
            message = error["msg"].removeprefix("Value error, ")
            raise ConfigError(
                f"invalid configuration: {source}: {fields.get(field, field)}: {message}"
            ) from None
        return OpenSlo(slo, source, fields)

    def _indicator(self, spec: dict[str, Any]) -> tuple[dict[str, Any], str]:
        if ("indicator" in spec) == ("indicatorRef" in spec):
            raise _Problem("spec", "needs indicator or indicatorRef")
        if "indicator" in spec:
            indicator = _table(spec["indicator"], "spec.indicator", {"metadata", "spec"})
            return indicator, "spec.indicator"
        name = _text(spec["indicatorRef"], "spec.indicatorRef")
        if name not in self.indicators:
            raise _Problem("spec.indicatorRef", f"no kind: SLI document named {_shown(name)}")
        document, _label = self.indicators[name]
        return document, f"SLI {_shown(name)}"

    def _values(self, document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        spec = _table(document.get("spec"), "spec", _SLO_SPEC)
        method = spec.get("budgetingMethod")
        if method != "Occurrences":
            raise _Problem(
                "spec.budgetingMethod",
                f"{_shown(method)}: only Occurrences (each case is an event; no time slices)",
            )
        indicator, at = self._indicator(spec)
        chosen, fields = _ratio(indicator, at)
        objective, objective_at = _objective(spec, "spec")
        window, window_at = _window(spec, "spec")
        values = {
            "name": document["metadata"].get("name"),
            "job": spec.get("service"),
            "objective": objective,
            "window": window,
            **chosen,
        }
        fields |= {
            "name": "metadata.name",
            "job": "spec.service",
            "objective": objective_at,
            "window": window_at,
        }
        return values, fields


def read_openslo(path: Path) -> list[OpenSlo]:
    """The SLOs of the OpenSLO v1 file at ``path``, each checked alone (the configuration's
    jobs are checked by the caller, naming the OpenSLO field through :meth:`OpenSlo.where`).

    Raises:
        ConfigError: the file cannot be read, is not YAML, or holds what evaluator does not
            read, naming the document and the field.
    """
    reader = _File(path, _documents(path))
    return reader.read()
