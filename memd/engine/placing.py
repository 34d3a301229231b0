"""Validating a topic update given by reference: where each new entry goes.

The reply places every new seq exactly once (alone, or with the existing
entry it repeats, which the merged entry then replaces in place), may open
new sections at the end, and may supersede entries (newer, same subject).
Existing sections keep their titles, order and entries' words.
"""

from __future__ import annotations

from typing import Any

from memd.engine.base import Block, Item, Section, TopicUpdate
from memd.engine.gating import key
from memd.engine.output import BadOutput
from memd.engine.steps import all_once, checked_supersession, field, listed, merged_entry, seqs_of, title_of


def records(data: dict[str, Any]) -> list[Any]:
    records = data.get("superseded") or []
    if not isinstance(records, list):
        raise BadOutput("'superseded' must be a list")
    return records


def kept_holder(record: Any, keyed: dict[str, Item], kept: list[Item]) -> Item | None:
    new = keyed.get(str(field(record, "new")))
    if new is None:
        return None
    return next((i for i in kept if set(new.seqs) <= set(i.seqs)), None)


def valid_update(data: dict[str, Any], sections: list[Section], block: Block) -> TopicUpdate:
    existing = {key(i): i for s in sections for i in s.items}
    incoming = {key(i): i for i in block.items}
    keyed = {**existing, **incoming}
    titles = {s.title for s in sections}
    texts = [i.text for i in block.items]
    used: list[str] = []
    replaced: dict[str, Item] = {}
    removed: set[str] = set()
    appended: dict[str, list[Item]] = {}
    fresh: list[str] = []
    placed: list[Item] = []
    for place in listed(data, "place"):
        keys = seqs_of(place, keyed)
        if not any(k in incoming for k in keys):
            raise BadOutput(f"placement {keys} holds no new entry; existing entries stay where they are")
        item = merged_entry(keys, keyed)
        used += keys
        placed.append(item)
        olds = [k for k in keys if k in existing]
        if olds:
            replaced[olds[0]] = item  # a merge takes the place of the existing entry
            removed.update(olds[1:])
            continue
        title = " ".join(str(field(place, "section")).split())
        if title not in titles:
            title = title_of(title, texts)
            if title not in fresh:
                fresh.append(title)
        appended.setdefault(title, []).append(item)
    superseded = []
    for record in records(data):
        holder = kept_holder(record, keyed, [*placed, *existing.values()])
        superseded.append(checked_supersession(record, keyed, holder))
        used.append(str(record["old"]))
        removed.add(str(record["old"]))
    all_once(list(incoming), [k for k in used if k in incoming])
    repeated = sorted({k for k in used if k in existing and used.count(k) > 1})
    if repeated:
        raise BadOutput(f"seqs repeated: {', '.join(repeated[:10])}")
    result = []
    for section in sections:
        items = [replaced.get(key(i), i) for i in section.items if key(i) not in removed or key(i) in replaced]
        result.append(Section(section.title, (*items, *appended.pop(section.title, []))))
    result += [Section(title, tuple(appended[title])) for title in fresh]
    return TopicUpdate(tuple(result), tuple(superseded))
