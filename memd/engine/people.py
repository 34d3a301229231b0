"""A transcript filed by person: the offline engine's words grouping gives
each speaker a topic of their own.

What people tell in a conversation is mostly their own life, and a question
about someone ("What activities does Melanie partake in?") is answered by
turns from many sittings: filed in one place, they read as that person's page
and a question gathers from it. So the blocks the words make of a buffer (a
subject and the turns around it, whoever said them) are cut by speaker, each
part goes to its speaker's topic, and there it is a section headed as the
block was: a question and its answer sit under the same heading, one in each
person's topic. A person's topic is headed by their name alone, above its
sections, so the name heads no entry and search weighs the entries as it
would anywhere else (a name in every heading lowered recall on LoCoMo).
Entries with no speaker label, and the turns of a chat with a model
("User: ...", "Assistant: ...": roles, not people; everything there is the
user's), are grouped and routed by their words as before. A person's topic
is split like any other when it grows past ``split_tokens``; its pieces keep
the name in their file names.
"""

from __future__ import annotations

from collections.abc import Callable

from memd.engine.base import Block, Item, Route, Section, TopicInfo
from memd.engine.text import speaker
from memd.engine.themes import topic_subject

OWN_SHARE = 0.8  # a topic is a person's when at least this share of its turns are theirs
# Speaker labels that name a role in a chat, not a person a topic could be about.
ROLES = frozenset({"user", "assistant", "human", "ai", "bot", "system", "me"})


def person(label: str | None) -> str | None:
    """A speaker label as a person, or None for no label or a role."""
    return None if label is None or label.lower() in ROLES else label


def owner(text: str) -> str | None:
    """Whose topic ``text`` (its lines) is: the person who said at least
    OWN_SHARE of its turns, if any. A topic filed by person holds one
    speaker's turns only; a topic of a conversation filed before, by words, holds
    both sides about evenly and is no one's (new turns open their speaker's topic)."""
    return person(topic_subject(text, OWN_SHARE))


def speaker_of(block: Block) -> str | None:
    """The one person who said every entry of ``block`` ("Melanie: ..."), else None."""
    found = {person(speaker(item.text)) for item in block.items}
    if len(found) != 1:
        return None
    (name,) = found
    return name


def by_speaker(blocks: list[Block]) -> list[Block]:
    """Each block cut into one block per person, in order of their first
    entry, each keeping the block's title; entries without a person's label
    stay together (a block of notes is unchanged)."""
    out: list[Block] = []
    for block in blocks:
        parts: dict[str | None, list[Item]] = {}
        for item in block.items:
            parts.setdefault(person(speaker(item.text)), []).append(item)
        if len(parts) <= 1:
            out.append(block)
            continue
        out.extend(Block(block.title, tuple(items)) for items in parts.values())
    return out


def routes(
    blocks: list[Block], topics: list[TopicInfo], chosen: list[Route], best: Callable[[Block, list[TopicInfo]], str]
) -> list[Route]:
    """``chosen`` (routes by words) with each one-speaker block sent to its
    speaker's topic instead: the one ``best`` picks among theirs (a person's
    topic may have been split), or a new one named after them (``titled``).
    Every block of one speaker in this plan goes to the same new topic."""
    owners: dict[str, list[TopicInfo]] = {}
    for topic in topics:
        who = owner(topic.text)
        if who is not None:
            owners.setdefault(who, []).append(topic)
    out = []
    for route in chosen:
        block = blocks[route.block]
        who = speaker_of(block)
        if who is None:
            out.append(route)
        elif who in owners:
            mine = owners[who]
            out.append(Route(route.block, mine[0].id if len(mine) == 1 else best(block, mine)))
        else:
            out.append(Route(route.block, None, who, titled=True))
    return out


def is_theirs(sections: list[Section], who: str) -> bool:
    """Whether a topic (its sections) is ``who``'s, or holds no entry yet."""
    lines = [item.text for section in sections for item in section.items]
    return not lines or owner("\n".join(lines)) == who


def section_for(sections: list[Section], block: Block) -> int | None:
    """Where a one-speaker block goes in its person's topic: the section headed
    as the block (the same subject met again), else None for a section of its own."""
    return next((i for i, section in enumerate(sections) if section.title and section.title == block.title), None)
