"""What a vector refresh embeds, and in which chunks (``memd.index.vectors``).

A record to embed is planned with its text, its sentences (``memd.index.sentences``)
and the hash of each; a chunk takes records in order until the texts in it that
were never embedded before (no stored vector has their hash) reach its size, so
a chunk of records whose texts are all known costs no model time at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memd.index.records import Record
from memd.index.segment import text_key, vector_text
from memd.index.sentences import sentences


@dataclass(frozen=True)
class Todo:
    order: int  # the record's place in the plan (file by file, in file order)
    rel: str
    rid: str
    text: str
    key: bytes
    parts: tuple[tuple[bytes, str], ...]  # each sentence's hash and text


def todo_of(order: int, rel: str, record: Record) -> Todo:
    """``record`` of the file ``rel``, to embed with its sentences."""
    text = vector_text(record)
    parts = tuple((text_key(sentence), sentence) for sentence in sentences(text))
    return Todo(order, rel, record.rid, text, text_key(text), parts)


def take(
    plan: list[Todo], start: int, texts: int, stored: Mapping[bytes, Any]
) -> tuple[list[Todo], list[tuple[bytes, str]]]:
    """Records from ``start`` on, until their texts never embedded before number ``texts``."""
    fresh: dict[bytes, str] = {}
    end = start
    while end < len(plan) and len(fresh) < texts:
        item = plan[end]
        for key, text in [(item.key, item.text), *item.parts]:
            if key not in stored:
                fresh.setdefault(key, text)
        end += 1
    return plan[start:end], list(fresh.items())
