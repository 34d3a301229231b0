"""What a note is about, as a person files it: the person, project or
organisation it names (``language.py`` finds the proper nouns), or, when it
names none that recurs, its meaning (``themes.py``).

- **A subject is a name said more than once.** "Heron milestone 1 due
  2026-11-28" and "Budget for Heron is 2,400 EUR" are both about Heron; a
  name said once ("Dr. Okafor") is a detail of its note, not a subject yet.
  Of the names a note says, the one with a topic already, else the one most
  notes say, is what it is about ("Heron: Ingrid prefers status updates on
  Fridays" is Heron's: Heron recurs more than Ingrid), so a label in front of
  a note ("Laptop note:") never decides where it goes.
- **A subject's title is its name as written at its fullest** ("Project
  Heron" where the notes also say "Heron").
- **A note of no subject yet goes to the month's notes** ("Notes 2026-11"),
  a topic of its own only once others join it; when a name recurs there, its
  notes move out to a topic of that name (``gather``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memd.core.signature import SIGNATURE_AT_START
from memd.engine import language
from memd.engine.base import Block, Item
from memd.engine.people import ROLES
from memd.engine.text import NOTE_LABELS, STOPWORDS, slugify, speaker, split_label

SAMPLE = 20  # a topic's latest lines read to tell whether its title is a name, or its label a speaker
LEAST = 2  # notes that must say a name before it is a subject
NOTES_TITLE = "Notes {month}"
_NOTES_ID = re.compile(r"notes-\d{4}-\d{2}(?:-\d+)?")
_TITLE_WORDS = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class Subject:
    key: str  # the name, lowercase ("heron")
    title: str  # as written at its fullest ("Project Heron")


def notes_title(moment: datetime | None, fallback: str) -> str:
    """The title of the month's notes topic for a note written at ``moment``."""
    return NOTES_TITLE.format(month=moment.strftime("%Y-%m") if moment is not None else fallback[:7])


def is_notes_topic(topic_id: str) -> bool:
    """Whether ``topic_id`` is a month's notes (memd's slug of ``NOTES_TITLE``)."""
    return _NOTES_ID.fullmatch(topic_id) is not None


def is_notes_title(title: str) -> bool:
    """Whether a heading is a month's notes title ("Notes 2026-11")."""
    return is_notes_topic(slugify(title))


def is_name(title: str, lines: Iterable[str] | None = None) -> bool:
    """Whether a title is a name ("Project Heron", "Bart"): a subject's topic, which
    takes the notes that name it and no others. Read alone a one-word title is
    often taken for a proper noun ("Dentist"), so where the topic's entry ``lines``
    are given, the pipeline must read a word of the title as a name in most of
    the lines (of the latest ``SAMPLE``) that say it ("Bart is lactose intolerant",
    not "Dentist appointment on 3 October")."""
    if not title.strip() or not language.available():
        return False
    reading = language.read([title])[0]
    if not reading.runs or " ".join(reading.runs).split() != title.split():
        return False
    if lines is None:
        return True
    keys = title_keys(title)
    saying = [text for line in lines if keys & _words_of(text := _entry_text(line))][-SAMPLE:]
    if not saying:
        return False
    named = sum(1 for r in language.read(saying) if keys & {n.lower() for n in r.names})
    return 2 * named > len(saying)


def _entry_text(line: str) -> str:
    """What an entry line of a topic says: no list mark, signature or label."""
    return split_label(SIGNATURE_AT_START.sub("", line.strip().removeprefix("- ").strip(), count=1).strip())[1]


def _words_of(text: str) -> set[str]:
    return {w.lower() for w in _TITLE_WORDS.findall(text)}


def title_keys(title: str) -> frozenset[str]:
    """The words of a topic's title or alias that can match a subject's name."""
    return frozenset(w.lower() for w in _TITLE_WORDS.findall(title) if w.lower() not in STOPWORDS and len(w) > 1)


def talking(items: Iterable[Item]) -> frozenset[str]:
    """The labels that name speakers among ``items``: those of a transcript's
    turns (entries cut from a source, ``src=``), or a label that heads two
    entries or more that speak as a person does (a conversation typed in:
    ``speaks``). A label heading notes says what they are about ("Laptop:
    charger is in the blue bag", "Garden: the apple tree needs pruning"),
    never who said them."""
    said: dict[str, list[str]] = {}
    found: set[str] = set()
    for item in items:
        name = speaker(item.text)
        if name is None:
            continue
        said.setdefault(name, []).append(item.text)
        if item.signature.src:
            found.add(name)
    return frozenset(found | {name for name, texts in said.items() if name not in found and speaks(texts[-SAMPLE:])})


def speaks(texts: list[str]) -> bool:
    """Whether ``texts`` (the lines a label heads) are a person's turns: ``LEAST`` lines
    or more, half or more of which say "I", "you", "we" or "my" (the pipeline reads the
    pronouns' person), where notes are written about things ("Bank: switched the
    mortgage to a fix"). Without the pipeline every label that heads two lines is a
    speaker, as before."""
    if len(texts) < LEAST:
        return False
    if not language.available():
        return True
    return 2 * sum(reading.personal for reading in language.read(texts)) >= len(texts)


def as_note(item: Item, speakers: frozenset[str]) -> Item:
    """``item`` as the rules read it: a note's label ("Laptop: ...") is part of
    what it says, not a speaker ("Laptop - ..."), so it is grouped and named by it.
    Only a view: the entry itself keeps its words."""
    name = speaker(item.text)
    if name is None or name in speakers:
        return item
    label, said = split_label(item.text)
    return Item(item.signature, f"{label.rstrip().removesuffix(':')} \u2014 {said}")


def of_notes(items: list[Item]) -> list[Subject | None]:
    """Each note's subject, where it has one: a name at least ``LEAST`` of ``items`` say
    (whether a name already has a topic is plan's to find: ``names_of``)."""
    if not items or not language.available():
        return [None] * len(items)
    readings = language.read([item.text for item in items])
    # A label that heads two notes or more is a subject the person named ("Car: MOT due
    # 14 March", "Car: front tyres at 3mm"); one heading a single note is a detail of it,
    # and a role ("User:", "Assistant:") is who wrote it.
    labels = [label if (label := label_of(item.text)) not in ROLES else None for item in items]
    headed = Counter(labels)
    said = [
        # "TODO:" says what kind of note it is, not what about.
        [
            key
            for key in dict.fromkeys(
                [*([label] if label and headed[label] >= LEAST else []), *(n.lower() for n in r.names)]
            )
            if key not in NOTE_LABELS
        ]
        for r, label in zip(readings, labels, strict=True)
    ]
    counts = Counter(key for keys in said for key in keys)
    chosen: list[str | None] = []
    for keys in said:
        fit = [k for k in keys if counts[k] >= LEAST]
        chosen.append(min(fit, key=lambda k: (-counts[k], keys.index(k))) if fit else None)
    titles = _titles(readings, chosen)
    return [Subject(key, titles[key]) if key is not None else None for key in chosen]


def label_of(text: str) -> str | None:
    """The label heading a note, lowercase ("car" of "Car: MOT due" or of its view "Car — MOT due")."""
    match = _VIEW_LABEL.match(text)
    name = match.group(1) if match else speaker(text)
    return name.lower() if name else None


_VIEW_LABEL = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}) — ")


def _titles(readings: list[language.Reading], chosen: list[str | None]) -> dict[str, str]:
    """Each subject's name as written at its fullest: the longest run of proper
    nouns that holds it (the commonest of equal length), else its commonest spelling."""
    runs: dict[str, Counter[str]] = {}
    for reading, key in zip(readings, chosen, strict=True):
        if key is None:
            continue
        found = runs.setdefault(key, Counter())
        for run in reading.runs:
            if key in (w.lower() for w in run.split()):
                found[run] += 1
    out = {}
    for key, found in runs.items():
        best = max(found, key=lambda run: (len(run.split()), found[run], run)) if found else key.title()
        out[key] = best
    return out


def blocks(items: list[Item]) -> tuple[list[Block], list[Item]]:
    """The notes of ``items`` that have a subject, one block per subject (in
    order of their first note), and the rest."""
    found = of_notes(items)
    grouped: dict[str, list[Item]] = {}
    titles: dict[str, str] = {}
    rest = []
    for item, subject in zip(items, found, strict=True):
        if subject is None:
            rest.append(item)
            continue
        grouped.setdefault(subject.key, []).append(item)
        titles[subject.key] = subject.title
    return [Block(titles[key], tuple(members)) for key, members in grouped.items()], rest


def names_of(item: Item) -> tuple[list[str], list[str]]:
    """The names a note says and its other capitalised words (lowercase, in order)."""
    if not language.available():
        return [], []
    reading = language.read([item.text])[0]
    names = [key for key in dict.fromkeys(n.lower() for n in reading.names) if key not in NOTE_LABELS]
    return names, [key for key in dict.fromkeys(w.lower() for w in reading.capitalised) if key not in names]


def topic_names(title: str, text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What a topic is about by name: the words of its title, and the capitalised
    words that a quarter or more of its lines say (at least two)."""
    lines = [line for line in text.splitlines()[1:] if line.strip()]
    said: Counter[str] = Counter()
    for line in lines:
        said.update(capitalised(line))
    least = max(LEAST, len(lines) // 4)
    return title_keys(title), frozenset(w for w, n in said.items() if n >= least and w not in STOPWORDS)


def capitalised(text: str) -> set[str]:
    """The capitalised words of ``text``, lowercase, a possessive's "'s" off ("Dana's" -> "dana")."""
    return {w.lower().removesuffix("'s").removesuffix("\u2019s") for w in _CAPITALISED.findall(text) if len(w) > 1}


_CAPITALISED = re.compile(r"(?<![\w'])[A-Z][\w'-]*")


def gather(items: list[Item]) -> list[Block]:
    """Notes of a month's notes topic that now share a subject, a block each:
    they move out to a topic of that subject."""
    found, _ = blocks(items)
    return [block for block in found if len(block.items) >= LEAST]
