"""What "the same words" means when memd proves it kept what a person wrote.

A fold keeps one text for several entries, and the proof that nothing was
lost is that the kept text *contains* each folded text: its words, in order,
as one run. Words are compared after Unicode normalisation and case folding,
with punctuation and spacing ignored, but every word counts: numbers ("5" in
"Ran 5 km"), units, names, negations ("don't"), colours. A stemmer or a
stopword list would make "Ran 5 km" and "Ran 12 km" the same statement, which
is the mistake this module exists to rule out.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# A word is a run of letters or digits; an apostrophe inside a word belongs to
# it ("don't" is not "do"), and a decimal point or separator inside a number
# too ("2.5" is not "2 5", "10,000" stays one number). Any other character
# that is not punctuation or space is a word of its own: an emoji, a currency
# sign, an arrow ("🎉" is all an entry may say, and "$5" is not "5").
_WORD = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+(?:'[^\W_]+)*|[^\w\s]")


@lru_cache(maxsize=1 << 14)
def words(text: str) -> tuple[str, ...]:
    """The words of ``text``, normalised: NFKC, case-folded, curly apostrophes straight."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return tuple(word for word in _WORD.findall(folded) if len(word) > 1 or not _punctuation(word))


def _punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def contains(container: str, part: str) -> bool:
    """``container`` says every word of ``part``, in order, as one run."""
    inner, outer = words(part), words(container)
    if not inner:
        # Punctuation alone ("!!!", "---") is all such a text says: it is kept only
        # where those characters are (an empty text says nothing to lose).
        said = "".join(part.split())
        return not said or said in "".join(container.split())
    if len(inner) > len(outer):
        return False
    # Joined with a separator no word holds, a run of words is a substring.
    return f"\x00{chr(0).join(inner)}\x00" in f"\x00{chr(0).join(outer)}\x00"


def holder_of(texts: list[str]) -> int | None:
    """Index of a text that contains every other one (the newest such), or None."""
    for i in range(len(texts) - 1, -1, -1):
        if all(contains(texts[i], other) for j, other in enumerate(texts) if j != i):
            return i
    return None
