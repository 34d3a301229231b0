"""Titles as a person writes them: the noun phrase that stands for a section
("Pottery class", "Adoption agencies"), read with the language pipeline
(``language.py``).

- **Only a noun phrase names a section**: its head is a noun, so a verb, an
  adjective, a greeting's filler or a word of when never does; determiners,
  possessives and numbers are left out ("my new pottery class" -> "new pottery
  class").
- **The phrase that stands for most of the section**: phrases count by their
  head ("class" in "pottery class" and "the class"), by how many of the
  section's entries say it; with the embedding model, by how close the phrase's
  meaning is to the section's mean as well. The head's commonest full phrase is
  the title.
- **Two phrases only when they belong together**: the second is said in the
  same entries as the first, and nearly as often ("Kids and pottery"), never two
  unrelated words joined by "and".
- Names of the people speaking, vague nouns ("day", "things", ``titles.VAGUE``)
  and the words of photo captions never name a section.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from memd.engine import language

TOGETHER = 0.5  # the share of the first phrase's entries the second must share to join it


def phrase_title(texts: list[str], ignore: frozenset[str], vague: frozenset[str], meaning: Any = None) -> str | None:
    """The title of the section whose entries say ``texts`` (as read: labels and
    captions gone), or None when no phrase stands out. ``ignore``: names (lowercase)
    of the people speaking."""
    if not texts or not language.available():
        return None
    readings = language.read(texts)
    spread: Counter[str] = Counter()  # head lemma -> entries that say it
    forms: dict[str, Counter[str]] = {}
    holders: dict[str, set[int]] = {}
    for n, reading in enumerate(readings):
        seen = set()
        for text, head in reading.phrases:
            words = text.lower().split()
            if head in vague or head in ignore or not set(words) - ignore - vague:
                continue
            kept = " ".join(w for w in text.split() if w.lower() not in ignore) or text
            forms.setdefault(head, Counter())[kept] += 1
            seen.add(head)
        for head in seen:
            spread[head] += 1
            holders.setdefault(head, set()).add(n)
    floor = 2 if len(texts) >= 3 else 1
    heads = [h for h in spread if spread[h] >= floor]
    if not heads:
        return None
    written = {h: _form(forms[h]) for h in heads}
    if meaning is not None:
        score = _by_meaning(heads, written, spread, texts, meaning)
    else:
        score = {h: spread[h] + 0.1 * len(written[h].split()) for h in heads}
    ranked = sorted(heads, key=lambda h: (-score[h], h))
    first = ranked[0]
    title = written[first]
    for other in ranked[1:]:
        shared = len(holders[first] & holders[other])
        if spread[other] * 2 >= spread[first] and shared >= TOGETHER * spread[first] and other not in title.lower():
            title = f"{title} and {written[other]}"
            break
        break  # only the runner-up may join: a third phrase is no title
    return title[0].upper() + title[1:]


def _form(counted: Counter[str]) -> str:
    """A head's commonest phrase; of equal counts the longer (it says more), then the first in order."""
    return max(counted, key=lambda form: (counted[form], len(form.split()), -list(counted).index(form)))


def _by_meaning(
    heads: list[str], written: dict[str, str], spread: Counter[str], texts: list[str], meaning: Any
) -> dict[str, float]:
    import numpy as np

    sample = texts[:: max(1, len(texts) // 64)][:64]
    centre = meaning.vectors(sample).sum(axis=0)
    centre = centre / (np.linalg.norm(centre) or 1.0)
    scores = meaning.vectors([written[h] for h in heads]) @ centre
    return {h: float(s) * math.log(1 + spread[h]) for h, s in zip(heads, scores, strict=True)}
