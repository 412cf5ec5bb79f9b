"""The records' quick __init__: the dataclass's own signature and effect, still frozen."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evaluator.models as models
from evaluator.models import (
    DELIVERY_FIELDS,
    Case,
    CaseRecord,
    CaseScores,
    Delivery,
    Retrieved,
    TargetResponse,
)

#: every dataclass of evaluator.models
CLASSES = [
    value
    for value in vars(models).values()
    if isinstance(value, type)
    and dataclasses.is_dataclass(value)
    and value.__module__ == models.__name__
]


def test_every_record_class_has_it() -> None:
    """A new record class gets the quick init too (or this names it)."""
    assert {c.__name__ for c in CLASSES} >= {"Case", "CaseRecord", "CaseScores", "Retrieved"}
    for cls in CLASSES:
        assert hasattr(cls, "__dataclass_init__"), f"{cls.__name__}: decorate it with _quick_init"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_signature_is_the_dataclass_one(cls: type) -> None:
    ours = inspect.signature(vars(cls)["__init__"])
    theirs = inspect.signature(cls.__dataclass_init__)  # type: ignore[attr-defined]
    assert ours == theirs
    assert [(p.name, p.default, p.annotation) for p in ours.parameters.values()] == [
        (p.name, p.default, p.annotation) for p in theirs.parameters.values()
    ]


def _both(cls: type, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    ours = cls(*args, **kwargs)
    theirs: Any = object.__new__(cls)
    cls.__dataclass_init__(theirs, *args, **kwargs)  # type: ignore[attr-defined]
    return ours, theirs


def _fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_defaults_and_factories_are_the_dataclass_ones(cls: type) -> None:
    required = {
        f.name: object()
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    ours, theirs = _both(cls, **required)
    assert _fields(ours) == _fields(theirs)
    again, again_theirs = _both(cls, **required)
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            # a fresh value per instance exactly when the dataclass makes one
            shared = getattr(ours, f.name) is getattr(again, f.name)
            assert shared == (getattr(theirs, f.name) is getattr(again_theirs, f.name))


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()


@settings(max_examples=100, database=None)
@given(data=st.data())
def test_any_arguments_make_the_same_record(data: st.DataObject) -> None:
    """Positional or keyword, each argument lands in its own field, as the dataclass's."""
    cls = data.draw(st.sampled_from(CLASSES))
    fields = dataclasses.fields(cls)
    required = [
        f
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    given_fields = required + [f for f in fields if f not in required and data.draw(st.booleans())]
    given_fields.sort(key=fields.index)
    values = [data.draw(scalars) for _ in given_fields]
    positional = data.draw(st.integers(min_value=0, max_value=len(required)))
    args = values[:positional]
    kwargs = {
        f.name: v for f, v in zip(given_fields[positional:], values[positional:], strict=True)
    }
    ours, theirs = _both(cls, *args, **kwargs)
    assert _fields(ours) == _fields(theirs)
    assert ours == theirs or any(v != v for _, v in _fields(ours))


def test_wrong_calls_fail_as_the_dataclass_ones() -> None:
    for call in (
        lambda init: init(object.__new__(Retrieved)),
        lambda init: init(object.__new__(Retrieved), "a", id="b"),
        lambda init: init(object.__new__(Retrieved), "a", 1.0, "t", "extra"),
        lambda init: init(object.__new__(Retrieved), "a", colour="red"),
    ):
        with pytest.raises(TypeError):
            call(Retrieved.__init__)
        with pytest.raises(TypeError):
            call(Retrieved.__dataclass_init__)  # type: ignore[attr-defined]


def test_still_frozen_and_usable_as_before() -> None:
    item = Retrieved("d", 0.5, "t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.id = "x"  # type: ignore[misc]
    assert hash(item) == hash(Retrieved("d", 0.5, "t"))
    assert dataclasses.replace(item, score=1.0) == Retrieved("d", 1.0, "t")
    assert pickle.loads(pickle.dumps(item)) == item
    assert copy.deepcopy(item) == item
    response = TargetResponse(retrieved=(item,), answer="a", delivery=Delivery(ttfb_seconds=0.1))
    assert response.timings == {} and response.ranked_ids == ("d",)
    record = CaseRecord(
        case=Case(id="c", question="q", relevance={"d": 1}),
        outcome=CaseScores(recall_at_k=1.0, mrr=1.0, ndcg_at_k=1.0),
        ranked_ids=("d",),
        answer="a",
        citations=(1,),
        latency_seconds=0.2,
        stage_seconds={},
    )
    assert record.texts == {} and record.cut_texts == frozenset() and record.attempts == 1
    fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    del fields["texts"]
    assert CaseRecord(**fields).texts is not record.texts  # each record its own dict
    assert pickle.loads(pickle.dumps(record)) == record


def test_delivery_fields_are_the_records_trailing_optional_fields() -> None:
    """The report writer and the case log write exactly these, each only when measured."""
    names = [f.name for f in dataclasses.fields(CaseRecord)]
    assert names[-len(DELIVERY_FIELDS) :] == list(DELIVERY_FIELDS)
    record_defaults = {f.name: f.default for f in dataclasses.fields(CaseRecord)}
    assert all(record_defaults[name] is None for name in DELIVERY_FIELDS)
