"""Filing the buffer into topics, one bounded batch at a time: the engine
rewrites the batch (fold, supersede, group), plans where each block goes,
and updates each topic; supersession records go to the topic that holds the
value live at the end."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from memd.consolidation.outcome import Move
from memd.consolidation.sections import sections_of
from memd.consolidation.supersessions import mark_supersessions, replaced_entries, take_marked
from memd.consolidation.workspace import Workspace
from memd.core.document import Document, Heading
from memd.core.signature import SeqSet
from memd.core.tokens import count_tokens
from memd.engine.base import Block, Engine, Item, Route, Supersession
from memd.engine.shortlist import route_shortlist
from memd.engine.subjects import is_notes_topic
from memd.engine.text import slugify


@dataclass
class Filing:
    """What filing the buffer did so far: mutable bookkeeping of one consolidation."""

    moves: list[Move] = field(default_factory=list)
    superseded: list[Supersession] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def file_batch(
    space: Workspace, engine: Engine, batch: list[Item], run: Filing, counter: Iterator[int], stamp: str
) -> None:
    # Entries that arrived saying what they replace (memory_update) take it out first.
    marked = take_marked(space, batch)
    run.replaced.update(marked.replaced)
    batch = marked.kept
    rewrite = engine.rewrite(batch)
    blocks = list(rewrite.blocks)
    index = space.index()
    shortlist, background = route_shortlist(blocks, index)
    topics = index.infos(shortlist)
    routes = engine.plan(blocks, topics, background)
    blocks, routes = _one_list_per_month(blocks, routes, marked.home)
    known = {topic.id for topic in topics}
    new_ids: dict[str, str] = {}
    for route in routes:
        block = blocks[route.block]
        home = marked.home(block.items)
        if home is not None and space.exists(home):
            topic_id = home  # an update goes where the fact it replaces was
        elif route.topic is not None and route.topic in known:
            topic_id = route.topic
        elif (month := _month_notes(space, route.new_title)) is not None:
            topic_id = month  # the month's notes are one topic, however many runs add to them
        else:
            title = route.new_title or block.title
            if title not in new_ids:
                new_ids[title] = space.create(title)
                # Headed by its title alone, the sections below it; the month's notes keep one list under theirs.
                if route.titled or is_notes_topic(slugify(title)):
                    space.set(new_ids[title], Document(blocks=(Heading.make(1, title),), final_newline=True))
            topic_id = new_ids[title]
        space.adopt(topic_id, counter, stamp)
        sections = sections_of(space.doc(topic_id))
        update = engine.update_topic(sections, block)
        sources = [*batch, *(item for section in sections for item in section.items)]
        records = [*rewrite.superseded, *update.superseded]
        space.apply(topic_id, mark_supersessions(update.sections, sources, records))
        run.superseded.extend(update.superseded)
        run.replaced.update(replaced_entries(update.superseded, sources))
        log = run.logs.setdefault(topic_id, [])
        _count_added(log, len(block.items))
        log += [f"seq {s.new} supersedes seq {s.old} ({s.reason})" for s in update.superseded]
        titles = {str(i.seqs): sec.title for sec in update.sections for i in sec.items}
        run.moves.extend(Move(str(item.seqs), topic_id, titles.get(str(item.seqs), "")) for item in block.items)
    run.replaced.update(replaced_entries(rewrite.superseded, batch))
    # In a chain (Lisbon -> Porto -> Kyoto in one buffer) the entry that
    # superseded Lisbon is itself superseded: the record goes to the topic of
    # the value that is live at the end, so every step is on record.
    chain = [*marked.records, *rewrite.superseded]
    later = {str(record.old): record.new for record in chain}
    for record in chain:
        run.superseded.append(record)
        live, seen = record.new, set()
        while str(live) in later and str(live) not in seen:
            seen.add(str(live))
            live = later[str(live)]
        holder = next((m.topic for m in run.moves if set(live) <= set(SeqSet.parse(m.seqs))), None)
        if holder is None and run.moves:
            holder = run.moves[-1].topic  # never unrecorded: verify counts on the log
        if holder is not None:
            run.logs.setdefault(holder, []).append(f"seq {record.new} supersedes seq {record.old} ({record.reason})")


def _one_list_per_month(
    blocks: list[Block], routes: list[Route], home: Callable[[tuple[Item, ...]], str | None]
) -> tuple[list[Block], list[Route]]:
    """The blocks bound for one month's notes as one block, where the first of them was:
    the month's notes keep one list in the order the notes came, and a note folds into
    an earlier one as it would on its own (``rules.fold_into_existing``), so this is the
    same filing, done in one update of the topic instead of one per note (thousands of
    notes of no subject made it quadratic)."""
    merged: dict[str, int] = {}  # the month's notes topic -> where its block is in ``kept``
    kept: list[tuple[Block, Route]] = []
    for route in routes:
        block = blocks[route.block]
        month = route.topic if route.topic is not None else slugify(route.new_title or "")
        if not is_notes_topic(month) or home(block.items) is not None:
            kept.append((block, route))
            continue
        if month not in merged:
            merged[month] = len(kept)
            kept.append((block, route))
            continue
        first, first_route = kept[merged[month]]
        kept[merged[month]] = (Block(first.title, first.items + block.items), first_route)
    return [block for block, _ in kept], [replace(route, block=n) for n, (_, route) in enumerate(kept)]


def _month_notes(space: Workspace, title: str | None) -> str | None:
    """The existing topic of the month's notes that ``title`` names, if there is one."""
    topic_id = slugify(title) if title else ""
    return topic_id if is_notes_topic(topic_id) and space.exists(topic_id) else None


_ADDED = re.compile(r"\+(\d+) entr(?:y|ies)")


def _count_added(log: list[str], added: int) -> None:
    """Count ``added`` entries in a topic's log for this run: one "+N entries" however
    many blocks the run filed there (thirty notes on one subject are "+30 entries",
    not thirty "+1 entry")."""
    for at, line in enumerate(log):
        if (match := _ADDED.fullmatch(line)) is not None:
            added += int(match.group(1))
            log[at] = f"+{added} entr{'y' if added == 1 else 'ies'}"
            return
    log.append(f"+{added} entr{'y' if added == 1 else 'ies'}")


def batches_of(items: list[Item], limit: int) -> list[list[Item]]:
    """Bounded batches (by tokens) so a huge buffer never becomes one huge step."""
    batches: list[list[Item]] = [[]]
    size = 0
    for item in items:
        tokens = count_tokens(item.text)
        if batches[-1] and size + tokens > limit:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += tokens
    return batches
