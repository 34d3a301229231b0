"""Validating the model's replies to rewrite, plan, split, merge and summaries.

Each reply is read as references to what the step was shown (seqs, block
numbers, topic ids) and is refused whole, with a reason the model can act
on, when it drops or repeats one, names one it was not shown, or writes
words its sources do not have (fidelity.py). A validator refuses rather
than repairs, because steps.py has a better remedy: the reason goes back to
the model once, then the offline step answers. Extraction and topic updates
are checked in extraction.py and placing.py.
"""

from __future__ import annotations

from typing import Any

from memd.engine.base import Block, Item, Rewrite, Route, Section, Supersession
from memd.engine.fidelity import Sources, unsupported
from memd.engine.output import BadOutput
from memd.engine.placing import kept_holder, records
from memd.engine.steps import all_once, checked_supersession, field, listed, merged_entry, seqs_of, text_of, title_of

MAX_SUMMARY = 300  # characters of a topic summary


def valid_rewrite(data: dict[str, Any], keyed: dict[str, Item]) -> Rewrite:
    """Blocks of merged entries, and supersessions, covering every seq of ``keyed`` once."""
    used: list[str] = []
    blocks = []
    for block in listed(data, "blocks"):
        entries = []
        for entry in listed(block, "entries"):
            keys = seqs_of(entry, keyed)
            used += keys
            entries.append(merged_entry(keys, keyed))
        if entries:
            blocks.append(Block(title_of(field(block, "title"), [i.text for i in entries]), tuple(entries)))
    superseded: list[Supersession] = []
    for record in records(data):
        holder = kept_holder(record, keyed, [i for b in blocks for i in b.items])
        superseded.append(checked_supersession(record, keyed, holder))
        used.append(str(record["old"]))
    all_once(list(keyed), used)
    return Rewrite(tuple(blocks), tuple(superseded))


def valid_routes(data: dict[str, Any], blocks: list[Block], ids: set[str]) -> list[Route]:
    """One route per block, to a known topic id or a new topic with a title."""
    routes: dict[int, Route] = {}
    for route in listed(data, "routes"):
        index = field(route, "block")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(blocks) or index in routes:
            raise BadOutput(f"route for block {index!r} is unknown or repeated")
        topic = route.get("topic")
        if topic is not None:
            if topic not in ids:
                raise BadOutput(f"unknown topic id {topic!r}")
            routes[index] = Route(index, topic)
        else:
            texts = [i.text for i in blocks[index].items]
            routes[index] = Route(index, None, title_of(route.get("title") or blocks[index].title, texts))
    if len(routes) != len(blocks):
        raise BadOutput(f"routes given for {len(routes)} of {len(blocks)} blocks")
    return [routes[n] for n in range(len(blocks))]


def valid_split(data: dict[str, Any], keyed: dict[str, Item]) -> list[Section]:
    """Titled sections that hold every entry of ``keyed`` once."""
    used: list[str] = []
    result = []
    for piece in listed(data, "sections"):
        keys = seqs_of(piece, keyed)
        used += keys
        items = tuple(keyed[k] for k in keys)
        result.append(Section(title_of(field(piece, "title"), [i.text for i in items]), items))
    all_once(list(keyed), used)
    return result


def valid_groups(data: dict[str, Any], ids: set[str]) -> list[list[str]]:
    """Merge groups of two or more known topic ids, no topic in two groups."""
    groups = []
    seen: set[str] = set()
    for group in listed(data, "groups"):
        if not isinstance(group, list) or len(group) < 2 or not set(map(str, group)) <= ids:
            raise BadOutput(f"group {group!r} must list two or more known topic ids")
        if seen & set(map(str, group)):
            raise BadOutput(f"group {group!r} repeats a topic of another group")
        seen |= set(map(str, group))
        groups.append([str(g) for g in group])
    return groups


def valid_summaries(data: dict[str, Any], sources: list[Sources]) -> list[str]:
    """One summary per topic, short, in the words of the topic (``sources``, one per topic)."""
    found: dict[int, str] = {}
    for entry in listed(data, "summaries"):
        number = field(entry, "id")
        if not isinstance(number, int) or not 0 <= number < len(sources) or number in found:
            raise BadOutput(f"summary id {number!r} is unknown or repeated")
        summary = " ".join(text_of(entry.get("summary"), "summary").split())
        if len(summary) > MAX_SUMMARY:
            raise BadOutput(f"summary {number} is longer than {MAX_SUMMARY} characters")
        problem = unsupported(summary, sources[number])
        if problem:
            raise BadOutput(f"summary {number}: {problem}; use the topic's own words")
        found[number] = summary
    if len(found) != len(sources):
        raise BadOutput(f"summaries given for {len(found)} of {len(sources)} topics")
    return [found[n] for n in range(len(sources))]
