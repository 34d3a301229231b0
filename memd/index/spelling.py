"""A query word no record holds, read as the nearest word the vault does hold.

Questions are typed fast ("When did Melaniie paitn a sunrise?"), and a word
misspelt matches nothing by its words, however well it matches in meaning.
A query word of ``MIN_LETTERS`` to ``MAX_LETTERS`` letters that is no word of the
dictionary and whose analysed form no record's text holds is read as the
spelling one edit away (a letter dropped, added, changed, or swapped with the
next) whose analysed form the most records hold; that spelling must be a
word of the dictionary too, unless the word typed is capitalised (a name:
"Melaniie" is read as "Melanie", "allergy" is not read as "allerg", a stem
the vault holds). A word with no such neighbour stays as typed. The
dictionary is the whole words of the embedding model's vocabulary (some
22,000 common English words and names): a word spelt right that the vault
does not hold ("hosted", "painting") is never read as one it does ("posted",
"pointing"). Without the model installed there is no dictionary, and no
word is read again. Measured on the LoCoMo dev slice with one typo put into
each question (README, "Typos").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

# Shorter words are one edit away from too many others ("bake": cake, lake, bike, back).
MIN_LETTERS = 5
# Longer ones are no misspelt word (a pasted hash, a key): the spellings one edit away
# from a word of n letters are 53n long words, 1.4 GB at 5,000 letters.
MAX_LETTERS = 30
MAX_WORDS = 64  # distinct words of one query looked at
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Respelled:
    query: str  # the query with each word read again in place
    words: tuple[tuple[str, str], ...] = ()  # (as typed, as read)


def respell(
    query: str,
    analyse: Callable[[str], list[str]],
    doc_freq: Callable[[str], int],
    spelt_right: Callable[[str], bool] | None = None,
) -> Respelled:
    """``query`` with each misspelt word no record holds read as its most common
    known neighbour. ``spelt_right``: whether a word is in the dictionary (by
    default, ``in_dictionary``)."""
    spelt_right = spelt_right or in_dictionary
    read: list[tuple[str, str]] = []
    out: list[str] = []
    at = 0
    seen: dict[str, str | None] = {}  # a word repeated is read once
    for match in _WORD.finditer(query):
        word = match.group(0)
        if not MIN_LETTERS <= len(word) <= MAX_LETTERS or not word.isascii():
            continue
        if word not in seen:
            # A question has a few dozen words; a pasted page is not respelled past its first ones.
            seen[word] = _nearest(word, analyse, doc_freq, spelt_right) if len(seen) < MAX_WORDS else None
        written = seen[word]
        if written is None:
            continue
        out.extend((query[at : match.start()], written))
        at = match.end()
        read.append((word, written))
    if not read:
        return Respelled(query)
    out.append(query[at:])
    return Respelled("".join(out), tuple(dict.fromkeys(read)))  # each word read again, once


def _nearest(
    word: str, analyse: Callable[[str], list[str]], doc_freq: Callable[[str], int], spelt_right: Callable[[str], bool]
) -> str | None:
    """How ``word`` is read: its most common known neighbour, or None to keep it."""
    terms = analyse(word)
    if len(terms) != 1 or doc_freq(terms[0]) > 0 or spelt_right(word):
        return None  # a stopword, a word the vault knows, or a word spelt right
    best: tuple[int, str] | None = None
    # A name ("Melaniie") may be read as any the vault holds; another word only as
    # one of the dictionary ("allergy" is not "allerg", a stem the vault holds).
    named = word[0].isupper()
    for candidate in sorted(edits(word.lower())):
        if not named and not spelt_right(candidate):
            continue
        found = analyse(candidate)
        count = doc_freq(found[0]) if len(found) == 1 else 0
        if count > 0 and (best is None or count > best[0]):
            best = (count, candidate)
    if best is None:
        return None
    return best[1].capitalize() if named else best[1]


def in_dictionary(word: str) -> bool:
    """Whether ``word`` is spelt right as far as memd can tell (any word is, with no dictionary)."""
    words = dictionary()
    return not words or word.lower() in words


@lru_cache(maxsize=1)
def dictionary() -> frozenset[str]:
    """The whole words of the embedding model's vocabulary (lowercase); empty
    when the model is not installed. Read only when a query has a word no record holds."""
    from memd.index.model_files import ModelUnavailable, minilm_folder

    try:
        folder = minilm_folder()
    except ModelUnavailable:
        return frozenset()
    try:
        # The vocabulary one word a line, as the model ships it beside its tokenizer: read in
        # a third of the time the tokenizer's JSON takes, for the same words.
        vocab: Iterable[str] = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
    except OSError:
        try:
            vocab = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return frozenset()
    return frozenset(word for word in vocab if word.isalpha())


def edits(word: str) -> set[str]:
    """Every spelling one edit away from ``word`` (lowercase letters)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    dropped = {a + b[1:] for a, b in splits if b}
    swapped = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    changed = {a + c + b[1:] for a, b in splits if b for c in LETTERS}
    added = {a + c + b for a, b in splits for c in LETTERS}
    return (dropped | swapped | changed | added) - {word}
