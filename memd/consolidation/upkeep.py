"""Topic upkeep after new entries land: split what grew too big, merge what
is small and alike. Both move whole heading sections (with any prose in
them), so nothing a person wrote is dropped."""

from __future__ import annotations

import re
from dataclasses import replace

from memd.consolidation.sections import apply_sections, partitions, sections_of, topic_text, topic_tokens
from memd.consolidation.workspace import Workspace
from memd.core.document import Block, Document, Frontmatter, Heading, Line
from memd.core.tokens import count_tokens
from memd.engine.base import Block as EngineBlock
from memd.engine.base import Engine, Item, Section
from memd.engine.people import owner
from memd.engine.shortlist import merge_shortlist, route_shortlist
from memd.engine.subjects import is_name, is_notes_topic
from memd.engine.text import slugify


def gather_subjects(space: Workspace, engine: Engine) -> list[tuple[str, str, tuple[str, ...]]]:
    """Notes of a month's notes topic that now share a subject move out to the
    topic of that subject (made when there is none): (from, to, the seqs moved;
    none when the emptied notes topic was deleted)."""
    moved: list[tuple[str, str, tuple[str, ...]]] = []
    # A note waits until a topic fits it: the month's notes this run added to are read
    # again, and every month's notes when a topic changed (one may fit now).
    changed = {t for t in space.touched if not is_notes_topic(t) and t not in space.deleted}
    for topic_id in sorted(set(space.ids()) | space.touched if changed else space.touched):
        if not is_notes_topic(topic_id) or topic_id in space.deleted or not space.exists(topic_id):
            continue
        sections = sections_of(space.doc(topic_id))
        items = [item for section in sections for item in section.items]
        refiled = _refiled(space, engine, items, changed)
        for block, home in [*((b, None) for b in engine.gather(items)), *refiled]:
            taken = {str(item.seqs) for item in block.items}
            if not taken <= {str(item.seqs) for section in sections for item in section.items}:
                continue  # gathered already
            target = home or slugify(block.title)
            if not space.exists(target) or target in space.deleted or is_notes_topic(target):
                target = space.create(block.title)
            update = engine.update_topic(sections_of(space.doc(target)), block)
            if sorted(str(i.seqs) for s in update.sections for i in s.items) != sorted(
                [*(str(i.seqs) for s in sections_of(space.doc(target)) for i in s.items), *taken]
            ):
                continue  # an engine's placing must keep exactly the items; else they stay in the notes
            space.set(target, apply_sections(space.doc(target), list(update.sections)))
            sections = [Section(s.title, tuple(i for i in s.items if str(i.seqs) not in taken)) for s in sections]
            space.set(topic_id, apply_sections(space.doc(topic_id), sections))
            moved.append((topic_id, target, tuple(str(item.seqs) for item in block.items)))
        if moved and moved[-1][0] == topic_id and _only_headings(space.doc(topic_id)):
            # Every note found its subject: nothing of a person's is left in it, and
            # its history (supersession records) goes with its last notes.
            space.carry_log(moved[-1][1], topic_id)
            space.delete(topic_id)
            moved.append((topic_id, moved[-1][1], ()))
    return moved


def _refiled(space: Workspace, engine: Engine, items: list[Item], changed: set[str]) -> list[tuple[EngineBlock, str]]:
    """Notes of a month's notes that a topic this run ``changed`` fits now, each
    with that topic: routed as a new note is (``Engine.refile``). Only changed
    topics are asked: against the others each note was routed when it came.
    A note waits in the month's notes only while no subject takes it ("Wisdom
    tooth aching again" joins "Dentist" once that topic is there)."""
    if not items or not changed:
        return []
    blocks = [EngineBlock("", (item,)) for item in items]
    index = space.index()
    shortlist, background = route_shortlist(blocks, index)
    topics = index.infos([t for t in dict.fromkeys([*shortlist, *sorted(changed)]) if t in changed])
    if not topics:
        return []
    known = {t.id for t in topics}
    routes = engine.refile(blocks, topics, background)
    return [(blocks[r.block], r.topic) for r in routes if r.topic is not None and r.topic in known]


def _only_headings(document: Document) -> bool:
    """A document with nothing but headings and blank lines (memd's, around entries now gone)."""
    return all(
        isinstance(block, Heading) or (isinstance(block, Line) and not block.raw.strip()) for block in document.blocks
    )


def split_topic(space: Workspace, engine: Engine, topic_id: str, limit: int) -> list[tuple[str, tuple[str, ...]]]:
    if topic_id in space.deleted:
        return []
    document = space.doc(topic_id)
    total = topic_tokens(document)
    if total <= limit:
        return []
    target = max(limit * 3 // 4, 1)
    sections = sections_of(document)
    sizes = [_tokens(s) for s in sections]
    # A section bigger than the target is first cut by meaning.
    if any(size > target for size in sizes):
        rebuilt: list[Section] = []
        extra: list[Section] = []
        for section, size in zip(sections, sizes, strict=True):
            if size > target and len(section.items) > 1:
                rebuilt.append(Section(section.title, ()))
                # The month's notes are one list in the order the notes came: cut in that order.
                extra.extend(_cut(engine, section, target, in_order=is_notes_topic(topic_id)))
            else:
                rebuilt.append(section)
        document = apply_sections(document, rebuilt + extra)
    parts = partitions(document)
    sections = sections_of(document)
    sizes = [_tokens(s) for s in sections]
    # The engine orders the sections so that what is about one thing is cut
    # into one piece; an order that is not a permutation is not used.
    order = [i + 1 for i in engine.arrange(sections[1:], sizes[1:], target)]
    if sorted(order) != list(range(1, len(parts))):
        order = list(range(1, len(parts)))
    chunks: list[list[int]] = [[]]
    size = 0
    for index in order:  # the preamble (index 0) stays
        if chunks[-1] and size + sizes[index] > target:
            chunks.append([])
            size = 0
        chunks[-1].append(index)
        size += sizes[index]
    if len(chunks) < 2:
        space.set(topic_id, document)
        return []
    for chunk in chunks:
        chunk.sort()  # a piece keeps its sections in the order they were written
    keep = [0, *chunks[0]]
    space.set(topic_id, _with_partitions(document, parts, keep))
    created = []
    # A person's topic (engine/people.py) keeps the name in its pieces' file names.
    who = owner(topic_text(document))
    for chunk in chunks[1:]:
        first = document.blocks[parts[chunk[0]][0]]
        title = getattr(first, "title", "") or "part"
        new_id = space.create(title, prefix=who or "")
        space.set(new_id, _titled(_with_partitions(Document(), parts, chunk, source=document), who))
        created.append(new_id)
    return [(topic_id, tuple(created))]


def merge_topics(space: Workspace, engine: Engine, limit: int, split_limit: int) -> list[tuple[str, str]]:
    """Merge small similar topics where one of the two changed in this
    consolidation: two untouched topics were compared when they last changed.
    The engine sees only the topics that can be about such a merge."""
    index = space.index()
    focus = [t for t in space.ids() if t in space.touched]
    shortlist, background = merge_shortlist(index, focus, limit, wide=engine.uses_model)
    catalog = index.infos(shortlist)
    known = {info.id: info for info in catalog}
    merged: list[tuple[str, str]] = []
    for group in engine.merge_groups(catalog, limit, background):
        # Engine output is a suggestion: ids must exist, differ and stay small.
        ids = [i for i in dict.fromkeys(group) if i in known and i not in space.deleted and not _own_subject(space, i)]
        if len(ids) < 2:
            continue
        # A topic a person named is never merged away: it takes the others in.
        ids.sort(key=lambda i: not persons(space.doc(i), i))
        survivor, *others = ids
        for absorbed in others:
            if survivor not in space.touched and absorbed not in space.touched:
                continue
            if persons(space.doc(absorbed), absorbed):
                continue
            if topic_tokens(space.doc(survivor)) + topic_tokens(space.doc(absorbed)) > split_limit:
                continue
            space.set(survivor, _appended(space.doc(survivor), space.doc(absorbed)))
            space.carry_log(survivor, absorbed)
            space.set(survivor, _with_names(space.doc(survivor), space.doc(absorbed)))
            space.delete(absorbed)
            relink(space, absorbed, survivor)
            merged.append((survivor, absorbed))
    return merged


def _own_subject(space: Workspace, topic_id: str) -> bool:
    """A topic that is one subject by itself and merges with none: the month's
    notes, and a subject's topic titled with its name ("Bart": not Lena's too)."""
    document = space.doc(topic_id)
    return is_notes_topic(topic_id) or is_name(document.title() or "", (e.entry.text for e in document.signed()))


def persons(document: Document, topic_id: str) -> bool:
    """Whether a person named this topic: its title is not the one memd's file
    name was made from ("Project Heron" in ``milestone-and-deadline.md``), or
    it has an alias that is none of its titles. memd never merges such a topic away."""
    title = document.title() or ""
    stem = re.sub(r"-\d+$", "", topic_id)
    if title and not stem.endswith(slugify(title)):
        return True
    data = document.frontmatter.data if document.frontmatter is not None else {}
    aliases = data.get("aliases")
    named = [str(a) for a in aliases] if isinstance(aliases, list) else ([str(aliases)] if aliases else [])
    # The titles of topics memd merged into this one are its aliases too (``_with_names``).
    log = data.get("update_log")
    merged = [m.group(1) for line in (log if isinstance(log, list) else []) if (m := _MERGED.search(str(line)))]
    stems = [stem, *(re.sub(r"-\d+$", "", m) for m in merged)]
    return any(not any(s.endswith(slugify(alias)) for s in stems) for alias in named)


_MERGED = re.compile(r"merged topic (\S+)")


def follow_renames(space: Workspace) -> list[tuple[str, str]]:
    """Topics a person renamed by hand since memd last wrote them (old id, new
    id): links to the old name point at the new one, and the renamed topic is
    written again, so its frontmatter ``id`` is its new name."""
    # A topic memd leaves alone (read-only, held for a possible secret) is renamed when it can be written.
    renames = [(old, new) for old, new in sorted(space.catalog.renamed().items()) if new not in space.skipped]
    for old, new in renames:
        relink(space, old, new)
        space.catalog.renamed_written(old, new)  # the summary memd wrote there is still its own
        space.set(new, space.doc(new))
    return renames


def relink(space: Workspace, old: str, new: str) -> None:
    """Every topic's links to ``old`` (merged into ``new``) point at ``new``:
    memd's ``related`` and the lines around entries (an entry's own words are its
    author's, and stay as written)."""
    pattern = re.compile(r"\[\[" + re.escape(old) + r"(?=[\]|#])")
    for topic_id in space.ids():
        if topic_id in space.deleted or topic_id == old:
            continue
        path = space.vault.topics_dir / f"{topic_id}.md"
        try:
            if f"[[{old}".encode() not in path.read_bytes():
                continue
        except OSError:
            continue
        document = space.doc(topic_id)
        blocks = [
            Line(pattern.sub(f"[[{new}", block.raw)) if isinstance(block, Line) else block for block in document.blocks
        ]
        data = dict(document.frontmatter.data) if document.frontmatter is not None else {}
        links = data.get("related")
        if isinstance(links, list):
            data["related"] = list(dict.fromkeys(pattern.sub(f"[[{new}", str(link)) for link in links))
            data["related"] = [link for link in data["related"] if link != f"[[{topic_id}]]"]
        frontmatter = Frontmatter.from_data(data) if document.frontmatter is not None else None
        space.set(topic_id, replace(document, blocks=tuple(blocks), frontmatter=frontmatter))


def _with_names(survivor: Document, absorbed: Document) -> Document:
    """``survivor`` with the absorbed topic's title and aliases among its aliases, so
    a link or a search by the old name still finds it."""
    data = dict(survivor.frontmatter.data) if survivor.frontmatter is not None else {}
    have = data.get("aliases")
    aliases = [str(a) for a in have] if isinstance(have, list) else ([str(have)] if have else [])
    gone = absorbed.frontmatter.data.get("aliases") if absorbed.frontmatter is not None else None
    extra = [absorbed.title() or "", *([str(a) for a in gone] if isinstance(gone, list) else [])]
    added = [a for a in dict.fromkeys(extra) if a and a not in aliases]
    if not added:
        return survivor
    data["aliases"] = aliases + added
    return replace(survivor, frontmatter=Frontmatter.from_data(data))


def _titled(document: Document, who: str | None = None) -> Document:
    """A piece of a split topic with one ``#`` title: a person's piece is
    "Caroline — Art and LGBTQ" above its sections (whose topic it is, then what
    about), any other its first heading, raised."""
    headings = [b for b in document.blocks if isinstance(b, Heading)]
    if not headings:
        return document
    first = headings[0]
    if who:
        body = [_deeper(b) if any(h.level == 1 for h in headings) else b for b in document.blocks]
        return replace(document, blocks=(Heading.make(1, f"{who} \u2014 {first.title}"), *body))
    if any(h.level == 1 for h in headings):
        return document
    raised = tuple(Heading.make(1, first.title) if b is first else b for b in document.blocks)
    return replace(document, blocks=raised)


def _deeper(block: Block) -> Block:
    """A heading one level down (at most ``######``); other blocks as they are."""
    if isinstance(block, Heading) and 0 < block.level < 6 and block.title:
        return Heading.make(block.level + 1, block.title)
    return block


def _tokens(section: Section) -> int:
    return sum(count_tokens(item.text) for item in section.items)


def _cut(
    engine: Engine, section: Section, target: int, depth: int = 0, unnamed: bool = False, in_order: bool = False
) -> list[Section]:
    """Halve by meaning until every piece fits; when the engine's cut is not
    usable (items changed, one side empty), or twelve cuts by meaning still left
    a piece too big (each took off a few entries), or the section is a list kept
    ``in_order``, halve in time order instead. Halves are named only once kept
    (``unnamed``: a half the engine left without a title): a section of
    thousands of entries is halved again and again, and naming every half on the
    way cost a sixth of the cut."""
    if _tokens(section) <= target or len(section.items) < 2:
        return [_named(engine, section) if unnamed else section]
    pieces = [] if in_order or depth > 12 else engine.split(section, 2, named=False)
    if not _same_items(section, pieces) or any(not p.items for p in pieces):
        if unnamed:
            section = _named(engine, section)  # its halves in time order keep its title
        half = len(section.items) // 2
        pieces = [Section(section.title, section.items[:half]), Section(section.title, section.items[half:])]
        return [piece for p in pieces for piece in _cut(engine, p, target, depth + 1, in_order=in_order)]
    return [piece for p in pieces for piece in _cut(engine, p, target, depth + 1, unnamed=not p.title)]


def _named(engine: Engine, section: Section) -> Section:
    return Section(engine.title(list(section.items)), section.items)


def _same_items(section: Section, pieces: list[Section]) -> bool:
    """An engine's split must keep exactly the section's items."""
    before = sorted(str(item.seqs) for item in section.items)
    after = sorted(str(item.seqs) for piece in pieces for item in piece.items)
    return before == after and len(pieces) > 1


def _with_partitions(
    target: Document, parts: list[tuple[int, int]], indices: list[int], source: Document | None = None
) -> Document:
    origin = source or target
    blocks: list[Block] = []
    for index in indices:
        start, end = parts[index]
        blocks.extend(origin.blocks[start:end])
    while blocks and isinstance(blocks[0], Line) and not blocks[0].raw.strip() and source is not None:
        blocks.pop(0)
    return replace(target, blocks=tuple(blocks), final_newline=True)


def _appended(survivor: Document, absorbed: Document) -> Document:
    blocks = list(survivor.blocks)
    if blocks and not (isinstance(blocks[-1], Line) and not blocks[-1].raw.strip()):
        blocks.append(Line(""))
    body = list(absorbed.blocks)
    if any(isinstance(block, Heading) and block.level == 1 for block in blocks):
        # The absorbed topic's title becomes a section of the survivor's: one `#` title a file.
        body = [_deeper(block) for block in body]
    while body and isinstance(body[0], Line) and not body[0].raw.strip():
        body.pop(0)
    return replace(survivor, blocks=tuple(blocks + body), final_newline=True)
