"""The offline engine: deterministic rules, lexical statistics and sentence vectors; no language model.

Every decision here is explainable from the words of the entries: tf-idf
vectors, cosine similarity and BM25-style fit with fixed thresholds. This
module answers each step of the seam (base.py) and keeps what is its own,
sentence extraction and placing entries in sections; the rules it applies
live beside it, one idea to a module: duplicates and supersession in
``rules.py``, grouping, splitting and merging in ``clustering.py``, routing
in ``coverage.py``, titles in ``titles.py``, summaries in ``summaries.py``; by meaning (with the
embedding model) in ``themes.py``, for notes and, with grouping "meaning", for all.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from memd.engine import clustering, coverage, language, people, subjects, summaries, themes, titles, unread
from memd.engine.base import Background, Block, Extracted, Item, Rewrite, Route, Scored, Section, TopicInfo, TopicUpdate
from memd.engine.rules import fold_duplicates, fold_into_existing, is_filler, supersede
from memd.engine.text import SENTENCE_BREAK, speaker, speakers

if TYPE_CHECKING:
    from memd.index.meaning import Meaning


class OfflineEngine:
    name = "offline"
    provenance = "offline"
    uses_model = False
    client = None  # no model: `memd ask` answers extractively

    def __init__(self, meaning: Meaning | None = None, *, grouping: str = "meaning") -> None:
        # Sentence vectors (the vault's embedding model). With grouping
        # "meaning" they group, route and split everything by meaning and
        # subject (themes.py); with "words" a transcript goes by words and by
        # speaker (people.py) and only notes, entries with no speaker, go by
        # meaning: by words alone twelve notes on one project opened three
        # topics beside the project's (bench/bench_routing.py measures it).
        # Words alone without a model.
        self.meaning = meaning
        self.grouping = grouping
        self._new_titles: dict[str, str] = {}  # a planned topic's title, by the first seq of each block sent to it
        self._talking: frozenset[str] = frozenset()  # the labels that name speakers in this run's batch
        self._subjects: dict[str, subjects.Subject] = {}  # this run's notes about a subject, by seq

    def _meaning(self) -> Meaning | None:
        """The model, when everything goes by meaning."""
        return self._notes_meaning() if self.grouping == "meaning" else None

    def _notes_meaning(self) -> Meaning | None:
        """The model, for notes."""
        return self.meaning if self.meaning is not None and self.meaning.available else None

    def _title(self, items: list[Item], people: frozenset[str] = frozenset()) -> str:
        """``titles.title``, naming notes by meaning when the model is there."""
        talking = self._talking | subjects.talking(items)
        views = [subjects.as_note(item, talking) for item in items]
        return titles.title(views, people, self._notes_meaning())

    def begin(self, run: str) -> None:
        pass

    def drain_notes(self) -> list[str]:
        if self.meaning is not None:
            self.meaning.save()  # the run's new vectors, for the next run and for search
        return []

    # --- extraction -----------------------------------------------------

    def extract(self, text: str) -> list[Extracted]:
        """One entry per informative sentence; greetings, thanks and bare
        acknowledgements are dropped."""
        found = []
        for sentence in SENTENCE_BREAK.split(text):
            cleaned = " ".join(sentence.split())
            if cleaned and not is_filler(cleaned):
                found.append(Extracted(cleaned))
        return found

    def extract_batch(self, texts: list[str]) -> list[list[Extracted]]:
        return [self.extract(text) for text in texts]

    # --- buffer rewrite -------------------------------------------------

    def rewrite(self, items: list[Item]) -> Rewrite:
        kept, superseded = supersede(fold_duplicates(items))
        meaning = self._meaning()
        if meaning is not None and kept:
            blocks = themes.group(kept, meaning.vectors([item.text for item in kept]), self._title)
            return Rewrite(tuple(blocks), tuple(superseded))
        notes_meaning = self._notes_meaning()
        self._talking = subjects.talking(kept)
        views = [subjects.as_note(item, self._talking) for item in kept]
        noted = [_is_note(view, notes_meaning) if notes_meaning is not None else False for view in views]
        # Notes the model cannot read (made-up words, another language) go by the nouns
        # they share, not by sitting: "Remember" said by a thousand notes is no subject.
        alone = [not note and speaker(view.text) is None for view, note in zip(views, noted, strict=True)]
        by_nouns = language.available() and any(alone)
        if notes_meaning is None or not (any(noted) or by_nouns):
            # In a transcript each speaker's part of a block goes to their own topic (people.py).
            return Rewrite(tuple(people.by_speaker(clustering.group(kept))), tuple(superseded))
        original = {id(view): item for view, item in zip(views, kept, strict=True)}
        notes = [view for view, note in zip(views, noted, strict=True) if note]
        apart = [item for item, one in zip(kept, alone, strict=True) if one and by_nouns]
        said = [item for item, note, one in zip(kept, noted, alone, strict=True) if not (note or (one and by_nouns))]
        # A note that names a subject goes by it, each on its own (plan finds the
        # subject's topic, or opens it); the rest go together by meaning.
        named = subjects.of_notes(notes)
        self._subjects = {str(view.seqs): subject for view, subject in zip(notes, named, strict=True) if subject}
        found = [Block(subject.title, (view,)) for view, subject in zip(notes, named, strict=True) if subject]
        rest = [view for view, subject in zip(notes, named, strict=True) if subject is None]
        if rest:
            vectors = notes_meaning.vectors([item.text for item in rest])
            found += themes.group(rest, vectors, self._title, above_mean=themes.STANDS_OUT)
        found = [Block(b.title, tuple(original[id(i)] for i in b.items)) for b in found]
        found += people.by_speaker(clustering.group(said)) if said else []
        found += unread.group(apart) if apart else []
        order = {id(item): n for n, item in enumerate(kept)}
        return Rewrite(tuple(sorted(found, key=lambda b: order[id(b.items[0])])), tuple(superseded))

    # --- planning -------------------------------------------------------

    def plan(self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Route]:
        """Route by how well a topic covers the block's words, BM25-style: each
        shared word counts by its rarity, saturating with its frequency in the
        topic, discounted for topics longer than average (a big topic knows
        many words without being about all of them). With the embedding
        model: by subject and meaning instead (themes.routes)."""
        meaning = self._meaning()
        if meaning is not None:
            return self._by_meaning(blocks, list(range(len(blocks))), topics, meaning)
        chosen = [scored.route for scored in self.plan_scored(blocks, topics, background)]
        found = people.routes(blocks, topics, chosen, lambda block, mine: self._best(block, mine, background))
        meaning = self._notes_meaning()
        # A label that heads two lines or more of a topic (a conversation filed before) is a speaker here too.
        labels = {name for block in blocks for item in block.items if (name := speaker(item.text))}
        if labels:
            spoken: dict[str, list[str]] = {}
            for line in (line for t in topics for line in t.text.splitlines()):
                if (name := speaker(line)) in labels:
                    spoken.setdefault(name, []).append(line)
            for item in (item for block in blocks for item in block.items):
                if (name := speaker(item.text)) in spoken:
                    spoken[name].append(item.text)
            self._talking |= {name for name, lines in spoken.items() if subjects.speaks(lines[-subjects.SAMPLE :])}
        views = [self._as_notes(block) for block in blocks]
        if meaning is not None:
            # Notes the model cannot read (another language, made-up words) go by the nouns
            # they share (unread.py): two that say one open a topic, and a lone one is no
            # subject yet: it waits in the month's notes.
            apart = {
                r.block: r
                for r in found
                if all(speaker(i.text) is None and not meaning.reads(i.text) for i in views[r.block].items)
            }
            if language.available():
                apart = unread.routes(views, apart, topics, self._new_titles)
            waiting = {b: self._or_notes(views, r, apart, subjects.LEAST) for b, r in apart.items()}
            found = [waiting.get(r.block, r) for r in found]
        notes = [b for b, bl in enumerate(views) if all(_is_note(i, meaning) for i in bl.items)] if meaning else []
        if meaning is None or not notes:
            return found
        by_subject = self._by_subject(views, notes, topics)
        rest = [b for b in notes if b not in by_subject]
        # Notes of no subject join a topic of a theme, never a subject's (a name) nor the month's notes.
        themed = [t for t in topics if not subjects.is_notes_topic(t.id) and not _is_subjects(t)]
        by_meaning = {route.block: route for route in self._by_meaning(views, rest, themed, meaning)} if rest else {}
        by_meaning = {b: self._or_notes(views, route, by_meaning) for b, route in by_meaning.items()}
        return [by_subject.get(route.block) or by_meaning.get(route.block, route) for route in found]

    def _as_notes(self, block: Block) -> Block:
        """``block`` as the rules read it: notes' labels part of what they say (``subjects.as_note``)."""
        return Block(block.title, tuple(subjects.as_note(item, self._talking) for item in block.items))

    def _by_subject(self, blocks: list[Block], chosen: list[int], topics: list[TopicInfo]) -> dict[int, Route]:
        """Routes of the ``chosen`` blocks of notes that are about a subject
        (subjects.py): to the topic whose title names it (or, failing that, whose
        lines keep naming it), else to a new topic of that name."""
        titled: dict[str, str] = {}  # a name -> the topic titled with it
        frequent: dict[str, str] = {}  # a name -> a topic whose lines keep saying it
        for topic in topics:
            if subjects.is_notes_topic(topic.id):
                continue
            heading, said = subjects.topic_names(_title_of(topic), topic.text)
            for key in heading:
                titled.setdefault(key, topic.id)
            for key in said:
                frequent.setdefault(key, topic.id)
        out: dict[int, Route] = {}
        for b in chosen:
            block = blocks[b]
            targets = [self._subject_route(item, titled, frequent, topics) for item in block.items]
            counted = Counter(t for t in targets if t is not None)
            if not counted:
                continue
            (target, named), count = counted.most_common(1)[0]
            if count * 2 < len(block.items):
                continue  # most of the block is about something else
            out[b] = Route(b, target, named if target is None else None)
        # A subject is a topic of its own once two notes or more go there; a note whose
        # fellows found other topics goes by meaning like any other.
        opened = Counter(r.new_title for b, r in out.items() for _ in blocks[b].items if r.topic is None)
        out = {b: r for b, r in out.items() if r.topic is not None or opened[r.new_title] >= subjects.LEAST}
        for b, route in out.items():
            if route.topic is None and route.new_title is not None:
                self._new_titles[str(blocks[b].items[0].seqs)] = route.new_title
        return out

    def _subject_route(
        self, item: Item, titled: dict[str, str], frequent: dict[str, str], topics: list[TopicInfo]
    ) -> tuple[str | None, str | None] | None:
        """Where a note about a subject goes, as (topic, new title); None: it is about none."""
        names, capitalised = subjects.names_of(item)
        for key in [*names, *capitalised]:
            if key in titled:
                return titled[key], None
        for key in names:
            if key in frequent:
                return frequent[key], None
        subject = self._subjects.get(str(item.seqs))
        if subject is None:
            return None
        month = next((t.id for t in topics if _says(t, subject.key)), None)
        if month is not None:
            # Its earlier notes wait in the month's notes: it joins them there (a new value
            # supersedes an old one as in any topic) and they move out together (gather).
            return month, None
        return None, subject.title

    def _or_notes(self, blocks: list[Block], route: Route, routes: dict[int, Route], least: int = themes.FEW) -> Route:
        """A new topic of fewer than ``least`` notes is no subject yet: its notes go to the month's notes."""
        if route.topic is not None or route.new_title is None:
            return route
        size = sum(
            len(blocks[r.block].items) for r in routes.values() if r.topic is None and r.new_title == route.new_title
        )
        return route if size >= least else unread.to_notes(blocks, route.block, self._new_titles)

    def _by_meaning(
        self, blocks: list[Block], chosen: list[int], topics: list[TopicInfo], meaning: Meaning
    ) -> list[Route]:
        """Routes by subject and meaning (themes.routes) of the ``chosen`` blocks, numbered as in ``blocks``."""
        mine = [blocks[b] for b in chosen]
        talking = speakers(item.text for block in blocks for item in block.items)
        found = [
            Route(chosen[r.block], r.topic, r.new_title, r.titled)
            for r in themes.routes(mine, topics, meaning, self._title, talking)
        ]
        # A new topic's first section is headed by the topic's own title.
        self._new_titles = {
            str(blocks[r.block].items[0].seqs): r.new_title for r in found if r.topic is None and r.new_title
        }
        return found

    def _best(self, block: Block, topics: list[TopicInfo], background: Background | None) -> str:
        """Of ``topics`` (one person's), the one whose words fit ``block`` best."""
        route = coverage.scored_routes([block], topics, background)[0].route
        return route.topic if route.topic is not None else topics[0].id

    def plan_scored(
        self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None
    ) -> list[Scored]:
        """``plan`` with each route's fit and the runner-up's, so a caller can
        tell a clear decision from a close one (``coverage.scored_routes``)."""
        return coverage.scored_routes(blocks, topics, background)

    # --- topic maintenance ----------------------------------------------

    def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
        existing = [(s, item) for s, section in enumerate(sections) for item in section.items]
        incoming, superseded = fold_into_existing(existing, list(block.items))
        replaced = {str(old.seqs) for old, _ in incoming if old is not None}
        lists = [[item for item in section.items if str(item.seqs) not in replaced] for section in sections]
        dropped = {str(s.old) for s in superseded}
        lists = [[item for item in items if str(item.seqs) not in dropped] for items in lists]
        new_section: list[Item] = []
        meaning = self._meaning()
        fresh = [item for old, item in incoming if old is None]
        own = people.speaker_of(block) if meaning is None else None
        if own is not None and not people.is_theirs(sections, own):
            own = None  # another topic (a model's route, a topic of notes): placed by words as before
        month = next((s for s, sec in enumerate(sections) if subjects.is_notes_title(sec.title)), None)
        notes = all(speaker(subjects.as_note(item, self._talking).text) is None for item in block.items)
        titled = [s for s, sec in enumerate(sections) if sec.title]
        if month is None and own is None and notes and (meaning is None or len(titled) == 1):
            # A subject's topic (titled with a name) keeps its notes under its title until it is
            # split; by meaning, while it has no section but its title (a person's sections stay).
            month = titled[0] if titled else None
            # Read with the notes coming in: a topic's first note may say its name only in its label.
            named = month is not None and subjects.is_name(
                sections[month].title, (i.text for i in [*sections[month].items, *block.items])
            )
            month = month if named else None
        if month is not None:
            # The month's notes keep one list, in the order they came.
            targets: list[int | None] = [month] * len(incoming)
        elif meaning is not None:
            # By meaning, a block (entries of one subject and theme) stays together:
            # in the section closest to it, or as a section of its own.
            joined = themes.place(lists, fresh, meaning) if fresh else None
            targets = [joined] * len(incoming)
        elif own is not None:  # a person's part of a block keeps its heading (people.py)
            targets = [people.section_for(sections, block)] * len(incoming)
        else:
            targets = clustering.by_words(sections, lists, [item for _, item in incoming])
        for (old, item), target in zip(incoming, targets, strict=True):
            if old is not None:  # a duplicate of an existing entry: take its place
                s = next(s for s, it in existing if it is old)
                lists[s].append(item)
            else:
                (lists[target] if target is not None else new_section).append(item)
        result = [Section(sec.title, tuple(items)) for sec, items in zip(sections, lists, strict=True)]
        if new_section:
            first = block.title
            if not any(s.title for s in sections) and block.items:
                first = self._new_titles.get(str(block.items[0].seqs), first)
            title = first if first not in {s.title for s in sections} else self._title(new_section)
            result.append(Section(title, tuple(new_section)))
        return TopicUpdate(tuple(result), tuple(superseded))

    def split(self, section: Section, parts: int, *, named: bool = True) -> list[Section]:
        meaning = self._meaning()
        if meaning is not None:
            return themes.split(section, parts, meaning, self._title if named else None)
        # Named here all the same: the words' split leaves the people around out of its titles.
        return clustering.split(section, parts)

    def arrange(self, sections: list[Section], sizes: list[int], target: int) -> list[int]:
        meaning = self._meaning()
        if meaning is None:
            return list(range(len(sections)))  # as written
        return themes.arrange(sections, sizes, target, meaning)

    def merge_groups(
        self, topics: list[TopicInfo], limit_tokens: int, background: Background | None = None
    ) -> list[list[str]]:
        return clustering.merge_groups(topics, limit_tokens, background)

    def summarise(self, sections: list[Section]) -> str:
        return summaries.summary(sections)

    def summarise_many(self, topics: list[list[Section]]) -> list[str]:
        return [self.summarise(sections) for sections in topics]

    def title(self, items: list[Item]) -> str:
        return self._title(items)

    def refile(self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Route]:
        kept = dict(self._new_titles)  # planning names new topics; refiling only joins existing ones
        try:
            return self.plan(blocks, topics, background)
        finally:
            self._new_titles = kept

    def gather(self, items: list[Item]) -> list[Block]:
        """Notes of the month's notes that now make a subject: a name two of them say, or
        two or more alike in meaning (grouped as a buffer's notes are, at ``themes.NOTES_LINK``)."""
        meaning = self._notes_meaning()
        if meaning is None:
            return []
        talking = self._talking | subjects.talking(items)
        views = [subjects.as_note(item, talking) for item in items]
        original = {id(view): item for view, item in zip(views, items, strict=True)}
        named = subjects.gather(views)
        taken = {id(item) for block in named for item in block.items}
        rest = [view for view in views if id(view) not in taken and _is_note(view, meaning)]
        # The month's notes gather across runs: more notes tell a theme more surely than one
        # buffer's few, so they group at a lower link (themes.NOTES_LINK).
        vectors = meaning.vectors([v.text for v in rest]) if len(rest) >= 2 else None
        if vectors is None:
            themed = []
        else:
            themed = themes.group(rest, vectors, self._title, themes.NOTES_LINK, above_mean=themes.STANDS_OUT)
        found = named + [block for block in themed if len(block.items) >= subjects.LEAST]
        for block in found:  # a gathered topic is titled by what it holds, not by where its notes first went
            for item in block.items:
                self._new_titles.pop(str(item.seqs), None)
        return [Block(block.title, tuple(original[id(item)] for item in block.items)) for block in found]


def _says(topic: TopicInfo, key: str) -> bool:
    """Whether a month's notes topic says the name ``key`` (lowercase), capitalised."""
    return subjects.is_notes_topic(topic.id) and key in subjects.capitalised(topic.text)


def _is_subjects(topic: TopicInfo) -> bool:
    """Whether ``topic`` is a subject's, titled with a name its lines say (``subjects.is_name``)."""
    return subjects.is_name(_title_of(topic), topic.text.splitlines()[1:])


def _title_of(topic: TopicInfo) -> str:
    """A topic's title: the first heading of its text."""
    return topic.text.split("\n", 1)[0]


def _is_note(item: Item, meaning: Meaning) -> bool:
    """Whether an entry goes by meaning among words: a note (not a turn of a
    transcript, "Dana: ...") in a language the model reads."""
    return speaker(item.text) is None and meaning.reads(item.text)
