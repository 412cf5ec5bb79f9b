"""The bundled knowledge base: help-centre chunks loaded from ``data/corpus.jsonl``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

__all__ = ["Chunk", "first_sentence_only", "load_corpus", "split_sentences"]

# a sentence ends at Chinese end punctuation, or at . ! ? followed by whitespace
_SENTENCE_END = re.compile(r"(?<=[。！？；])|(?<=[.!?])\s+")


def split_sentences(text: str) -> tuple[str, ...]:
    """Split text into sentences, keeping their end punctuation; empty pieces dropped."""
    return tuple(s.strip() for s in _SENTENCE_END.split(text) if s and s.strip())


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable passage of the help centre."""

    id: str
    title: str
    topic: str
    lang: str
    text: str

    @property
    def sentences(self) -> tuple[str, ...]:
        return split_sentences(self.text)


def load_corpus() -> tuple[Chunk, ...]:
    """Read the bundled corpus (package data), in file order.

    Raises:
        ValueError: a line is not a JSON object with the five string fields, or an id repeats.
    """
    source = resources.files("evaluator.reference").joinpath("data/corpus.jsonl")
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        fields = ("id", "title", "topic", "lang", "text")
        if not isinstance(record, dict) or not all(isinstance(record.get(f), str) for f in fields):
            raise ValueError(f"corpus.jsonl:{number}: expected an object with string {fields}")
        if record["id"] in seen:
            raise ValueError(f"corpus.jsonl:{number}: duplicate id {record['id']!r}")
        seen.add(record["id"])
        chunks.append(Chunk(**{f: record[f] for f in fields}))
    return tuple(chunks)


def first_sentence_only(chunks: Iterable[Chunk]) -> tuple[Chunk, ...]:
    """The corpus as a broken parser leaves it: each body cut after its first sentence."""
    return tuple(Chunk(c.id, c.title, c.topic, c.lang, (c.sentences or ("",))[0]) for c in chunks)
