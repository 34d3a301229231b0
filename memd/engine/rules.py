"""Rules about entries themselves, shared by both engines: what is filler,
what is a duplicate, and when a newer statement supersedes an older one."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from functools import lru_cache

from memd.core.signature import SeqSet
from memd.core.words import contains, words
from memd.engine.base import Item, Supersession
from memd.engine.text import normal_form, split_label

_FILLER = frozenset(
    (
        "hi hello hey hiya thanks thank thx ty bye goodbye cheers lol haha hahaha wow cool nice great awesome "
        "ok okay sure yep yeah yes no np welcome see soon later talk catch care good morning night evening "
        "afternoon glad happy sounds amazing definitely totally absolutely right agreed true same too you "
    ).split()
)
_STATEMENT = re.compile(
    r"^(?P<subject>[^.!?]{3,60}?)\s+(?:is|are|is now|are now|has changed to|changed to|moved to)\s+"
    r"(?P<value>[^.!?]+)[.!]?$",
    re.IGNORECASE,
)
_VAGUE_SUBJECT = frozenset(("it this that there they he she i you we what which who everything something ").split())


def is_filler(sentence: str) -> bool:
    words = re.findall(r"[^\W_]+", sentence.lower())
    return not words or all(word in _FILLER for word in words)


def fold_duplicates(items: list[Item]) -> list[Item]:
    """An entry folds into another only when the other says all it said
    (``foldable``); the kept entry takes the seqs and provenance of both.
    Anything else stays, side by side: two runs of different lengths are two
    facts however alike their words."""
    kept: list[Item] = []
    # Each item is compared only with the kept ones that could hold it or be held by
    # it (as ``_FoldIndex`` finds them), not with every one: a round of 2,000 chat
    # turns made 250,000 comparisons. The first of them that folds wins, as before.
    frequency: Counter[str] = Counter(w for item in items for w in _unique(item.text))
    holding: dict[str, list[int]] = {}
    by_rarest: dict[str, list[int]] = {}
    wordless: list[int] = []  # punctuation alone: held by any text that has those characters

    def rarest(unique: AbstractSet[str]) -> str:
        return min(unique, key=lambda w: (frequency[w], w))

    def remember(k: int) -> None:
        # Called again when a fold gives kept[k] the other's text: its old words stay
        # listed, which only adds a comparison.
        unique = _unique(kept[k].text)
        if not unique:
            wordless.append(k)
            return
        for w in unique:
            holding.setdefault(w, []).append(k)
        by_rarest.setdefault(rarest(unique), []).append(k)

    for item in items:
        unique = _unique(item.text)
        if unique:
            found = {k for w in unique for k in by_rarest.get(w, ())}
            found.update(holding.get(rarest(unique), ()))
            found.update(wordless)
            candidates: Iterable[int] = sorted(found)
        else:
            candidates = range(len(kept))
        match = next((k for k in candidates if foldable(kept[k], item)), None)
        if match is None:
            kept.append(item)
            remember(len(kept) - 1)
        else:
            kept[match] = combine(kept[match], item)
            remember(match)
    return kept


# Keys that say where an entry came from, not what it says: two entries that
# differ only in these can be one entry with the provenance of both.
_PROVENANCE = frozenset(("seq", "time", "again", "src", "supersedes"))


def foldable(a: Item, b: Item) -> bool:
    """One of ``a`` and ``b`` contains every word of the other (``core.words``),
    and they agree on every piece of metadata that is not provenance: a fold
    never turns a person's entry into an ``ai`` one, nor drops a ``project=``."""
    if not (contains(a.text, b.text) or contains(b.text, a.text)):
        return False
    meta_a = {k: v for k, v in a.signature.fields if k not in _PROVENANCE}
    meta_b = {k: v for k, v in b.signature.fields if k not in _PROVENANCE}
    return meta_a == meta_b


def combine(older: Item, newer: Item) -> Item:
    """The entry that contains the other's words keeps its text (the newer when
    both say the same words); the seqs, sources and times of both stay: ``time``
    is when it was first said, ``again`` when it was said again (``+``-joined),
    so a fold loses no date. Callers check ``foldable`` first."""
    seqs = SeqSet.of([*older.seqs, *newer.seqs])
    refs = [r for ref in (older.signature.src, newer.signature.src) if ref for r in ref.split(";")]
    src = ";".join(dict.fromkeys(refs)) or None
    replaced = [v for item in (older, newer) if (v := item.signature.get("supersedes"))]
    marks = "+".join(replaced) if len(replaced) > 1 else (replaced[0] if replaced else None)
    holder = newer if contains(newer.text, older.text) else older
    said = [t for item in (older, newer) for t in (item.signature.time, *_again(item)) if t]
    first = older.signature.time or newer.signature.time
    again = "+".join(t for t in dict.fromkeys(said) if t != first) or None
    signature = holder.signature.replace(seq=str(seqs), src=src, supersedes=marks, time=first, again=again)
    return Item(signature, holder.text)


def _again(item: Item) -> list[str]:
    """The times an entry was said again, before a fold (``combine``)."""
    return [t for t in (item.signature.get("again") or "").split("+") if t]


# A supersession needs an attribute: "Sam's city is Lisbon" -> "... is Kyoto"
# gives Sam's city a new value, while "Priya is the tech lead" and "Priya is
# vegetarian" are two predicates of one person, both true. The subject must
# be possessed ("Sam's", "my", "our" ...) and end in a noun that names an
# attribute with one value at a time, or be said to be one thing ("a ...").
_OWNER = re.compile(r"^(?:(?:my|our|his|her|their|its|your)|[^\s']+'s?)\s+(?P<attribute>.+)$")
_ATTRIBUTES = frozenset(
    (
        "address age birthday budget car city code colour color company country date day deadline dentist "
        "doctor editor email employer handle height home hometown id job language lead location manager name "
        "number partner password phone pin plan position price rent role salary school size status team time "
        "title town username version weight wifi"
    ).split()
)
_FAVOURITE = frozenset(("favourite", "favorite"))


@lru_cache(maxsize=1 << 14)
def statement(text: str) -> tuple[str, str] | None:
    """``(subject, value)`` for a short "X's A is V" statement, A an attribute."""
    flat = " ".join(text.split())
    # In a transcript, "Caroline: My city is Lisbon" is about Caroline's city,
    # and Melanie's "my city" is another subject.
    label, said = split_label(flat)
    speaker = normal_form(label).replace(" ", "_") if label else None
    match = _STATEMENT.match(said)
    if not match:
        return None
    subject = normal_form(match.group("subject").replace("’", "'"))
    if speaker and subject.split(" ", 1)[0] in ("my", "our"):
        subject = f"{speaker}'s {subject.split(' ', 1)[1]}" if " " in subject else subject
    words = subject.split()
    if not 2 <= len(words) <= 6 or set(words) & _VAGUE_SUBJECT:
        return None
    owned = _OWNER.match(subject)
    if owned is None:
        return None
    attribute = owned.group("attribute").split()
    value = normal_form(match.group("value"))
    # "Dana's bike is a green Brompton": a possessed thing said to be one
    # thing (an indefinite noun phrase) has one such identity at a time.
    identity = value.split(" ", 1)[0] in ("a", "an")
    if attribute[-1] not in _ATTRIBUTES and not set(attribute) & _FAVOURITE and not identity:
        return None
    return subject, value


def supersede(items: list[Item]) -> tuple[list[Item], list[Supersession]]:
    """A later "X's A is V" replaces an earlier "X's A is W" about the same
    attribute; a chain (V1 -> V2 -> V3) records each step, so every value
    but the newest is accounted for."""
    latest: dict[str, int] = {}
    dropped: set[int] = set()
    records = []
    for i, item in enumerate(items):
        found = statement(item.text)
        if found is None:
            continue
        subject, value = found
        if subject in latest:
            j = latest[subject]
            if statement(items[j].text) != found:
                dropped.add(j)
                records.append(Supersession(item.seqs, items[j].seqs, f"{subject}: now {value!r}"))
        latest[subject] = i
    return [item for i, item in enumerate(items) if i not in dropped], records


def fold_into_existing(
    existing: list[tuple[int, Item]], incoming: list[Item]
) -> tuple[list[tuple[Item | None, Item]], list[Supersession]]:
    """Pair each incoming item with the older existing item it folds with (if
    any, ``foldable``) and find existing statements it supersedes."""
    folds = _FoldIndex([item for _, item in existing])
    subjects = {}
    for _, item in existing:
        found = statement(item.text)
        if found:
            subjects[found[0]] = (item, found[1])
    paired: list[tuple[Item | None, Item]] = []
    superseded = []
    # An existing entry that took an incoming item is that entry with it from then on: a
    # later item folds into the two together, as if each had been filed on its own (one
    # pair per existing entry, else its seqs would live twice).
    became: dict[int, int] = {}  # id of an existing entry -> where its pair is in ``paired``
    for item in incoming:
        old = next(
            (
                o
                for o in folds.candidates(item)
                if (now := paired[became[id(o)]][1] if id(o) in became else o).seqs.last < item.seqs.first
                and foldable(now, item)
            ),
            None,
        )
        if old is not None:
            if id(old) in became:
                at = became[id(old)]
                paired[at] = (old, combine(paired[at][1], item))
            else:
                became[id(old)] = len(paired)
                paired.append((old, combine(old, item)))
            continue
        found = statement(item.text)
        if found and found[0] in subjects and subjects[found[0]][1] != found[1]:
            old_item = subjects.pop(found[0])[0]
            superseded.append(Supersession(item.seqs, old_item.seqs, f"{found[0]}: now {found[1]!r}"))
        paired.append((None, item))
    return paired, superseded


class _FoldIndex:
    """The existing items that could fold with a new one, without comparing it
    with every entry of a big topic: one that contains the new text holds its
    rarest word; one the new text contains has its own rarest word in it."""

    def __init__(self, items: list[Item]) -> None:
        # A topic's entries are read again for every block filed into it: their word sets are remembered.
        self.frequency: Counter[str] = Counter(w for item in items for w in _unique(item.text))
        self.holding: dict[str, list[Item]] = {}
        self.by_rarest: dict[str, list[Item]] = {}
        for item in items:
            unique = _unique(item.text)
            for w in unique:
                self.holding.setdefault(w, []).append(item)
            if unique:
                self.by_rarest.setdefault(self._rarest(unique), []).append(item)

    def _rarest(self, unique: AbstractSet[str]) -> str:
        return min(unique, key=lambda w: (self.frequency[w], w))

    def candidates(self, item: Item) -> list[Item]:
        unique = _unique(item.text)
        if not unique:
            return []
        found = {id(c): c for w in unique for c in self.by_rarest.get(w, ())}
        if all(w in self.frequency for w in unique):
            found.update((id(c), c) for c in self.holding.get(self._rarest(unique), ()))
        return sorted(found.values(), key=lambda c: c.seqs.first)


@lru_cache(maxsize=1 << 14)
def _unique(text: str) -> frozenset[str]:
    return frozenset(words(text))
