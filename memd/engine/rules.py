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
    # it (``_Holders``), not with every one: a round of 2,000 chat turns made 250,000
    # comparisons. The first of them that folds wins, as before.
    holders = _Holders(item.text for item in items)
    wordless: list[int] = []  # punctuation alone: held by any text that has those characters
    for item in items:
        candidates: Iterable[int] = (
            sorted(holders.candidates(item.text).union(wordless)) if _unique(item.text) else range(len(kept))
        )
        match = next((k for k in candidates if foldable(kept[k], item)), None)
        if match is None:
            kept.append(item)
            match, was = len(kept) - 1, None
        else:
            was = kept[match].text
            kept[match] = combine(kept[match], item)
        # Listed again when a fold gives it the other's text: its old words stay
        # listed, which only adds a comparison.
        if kept[match].text != was and not holders.add(match, kept[match].text):
            wordless.append(match)
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
    olds = [item for _, item in existing]
    holders = _Holders(item.text for item in olds)
    for k, entry in enumerate(olds):
        holders.add(k, entry.text)
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
    became: dict[int, int] = {}  # an existing entry -> where its pair is in ``paired``

    def now(k: int) -> Item:
        return paired[became[k]][1] if k in became else olds[k]

    for item in incoming:
        candidates = sorted(holders.candidates(item.text), key=lambda k: olds[k].seqs.first)
        match = next((k for k in candidates if now(k).seqs.last < item.seqs.first and foldable(now(k), item)), None)
        if match is not None:
            was = now(match).text
            if match in became:
                paired[became[match]] = (olds[match], combine(now(match), item))
            else:
                became[match] = len(paired)
                paired.append((olds[match], combine(olds[match], item)))
            if now(match).text != was:  # it holds words it did not: a later item is looked for there too
                holders.add(match, now(match).text)
            continue
        found = statement(item.text)
        if found and found[0] in subjects and subjects[found[0]][1] != found[1]:
            old_item = subjects.pop(found[0])[0]
            superseded.append(Supersession(item.seqs, old_item.seqs, f"{found[0]}: now {found[1]!r}"))
        paired.append((None, item))
    return paired, superseded


class _Holders:
    """Where to look for the entries that could fold with a text, without comparing
    it with every one (a big topic's, a round's): one that contains the text holds
    its rarest word; one the text contains has its own rarest word in it. Entries are
    listed by a number of the caller's; words are rare by their count in ``texts``."""

    def __init__(self, texts: Iterable[str]) -> None:
        # A topic's entries are read again for every block filed into it: their word sets are remembered.
        self.frequency: Counter[str] = Counter(w for text in texts for w in _unique(text))
        self.holding: dict[str, list[int]] = {}
        self.by_rarest: dict[str, list[int]] = {}

    def _rarest(self, unique: AbstractSet[str]) -> str:
        # A word not in ``texts`` counts 0: rarest, and held by none.
        return min(unique, key=lambda w: (self.frequency[w], w))

    def add(self, key: int, text: str) -> bool:
        """List entry ``key`` by the words of ``text``; False when it has none (punctuation alone)."""
        unique = _unique(text)
        if not unique:
            return False
        for w in unique:
            self.holding.setdefault(w, []).append(key)
        self.by_rarest.setdefault(self._rarest(unique), []).append(key)
        return True

    def candidates(self, text: str) -> set[int]:
        """The entries that may hold ``text`` or be held by it (none for a text without words)."""
        unique = _unique(text)
        if not unique:
            return set()
        found = {k for w in unique for k in self.by_rarest.get(w, ())}
        found.update(self.holding.get(self._rarest(unique), ()))
        return found


@lru_cache(maxsize=1 << 14)
def _unique(text: str) -> frozenset[str]:
    return frozenset(words(text))
