"""Rules about entries themselves, shared by both engines: what is filler,
what is a duplicate, and when a newer statement supersedes an older one."""

from __future__ import annotations

import re

from memd.core.signature import SeqSet
from memd.engine.base import Item, Supersession
from memd.engine.text import normal_form, terms

NEAR_DUPLICATE = 0.85  # Jaccard of term sets

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
    """Exact and near duplicates collapse into the newest copy, which takes
    all their seqs and provenance."""
    kept: list[Item] = []
    term_sets: list[frozenset[str]] = []
    forms: list[str] = []
    for item in items:
        form, words = normal_form(item.text), frozenset(terms(item.text))
        match = next(
            (k for k in range(len(kept)) if forms[k] == form or _near(term_sets[k], words)),
            None,
        )
        if match is None:
            kept.append(item)
            term_sets.append(words)
            forms.append(form)
            continue
        kept[match] = combine(kept[match], item)
    return kept


def _near(a: frozenset[str], b: frozenset[str]) -> bool:
    return len(a) >= 4 and len(b) >= 4 and len(a & b) / len(a | b) >= NEAR_DUPLICATE


def combine(older: Item, newer: Item) -> Item:
    """``newer`` wins the text and time; the seqs and sources of both stay."""
    seqs = SeqSet.of([*older.seqs, *newer.seqs])
    refs = [r for ref in (older.signature.src, newer.signature.src) if ref for r in ref.split(";")]
    src = ";".join(dict.fromkeys(refs)) or None
    return Item(newer.signature.replace(seq=str(seqs), src=src), newer.text)


def statement(text: str) -> tuple[str, str] | None:
    """``(subject, value)`` for a short "X is Y" statement with a concrete subject."""
    match = _STATEMENT.match(" ".join(text.split()))
    if not match:
        return None
    subject = normal_form(match.group("subject"))
    words = subject.split()
    if not 1 <= len(words) <= 6 or set(words) & _VAGUE_SUBJECT:
        return None
    return subject, normal_form(match.group("value"))


def supersede(items: list[Item]) -> tuple[list[Item], list[Supersession]]:
    """A later "X is Y" replaces an earlier "X is Z" about the same X."""
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
    """Pair each incoming item with the existing item it duplicates (if any)
    and find existing statements it supersedes."""
    forms = {normal_form(item.text): item for _, item in existing}
    subjects = {}
    for _, item in existing:
        found = statement(item.text)
        if found:
            subjects[found[0]] = (item, found[1])
    paired: list[tuple[Item | None, Item]] = []
    superseded = []
    for item in incoming:
        old = forms.get(normal_form(item.text))
        if old is not None and old.seqs.last < item.seqs.first:
            paired.append((old, combine(old, item)))
            continue
        found = statement(item.text)
        if found and found[0] in subjects and subjects[found[0]][1] != found[1]:
            old_item = subjects.pop(found[0])[0]
            superseded.append(Supersession(item.seqs, old_item.seqs, f"{found[0]}: now {found[1]!r}"))
        paired.append((None, item))
    return paired, superseded
