"""Naming by keywords: the offline titles of blocks and sections, and topic summaries.

A name is made of the entries' own words, the terms that weigh most in them
and recur across them, shown as people wrote them; a summary adds the entry
closest to the whole. The model engine falls back on these, and the
offline grouping, splitting and placing name what they make with them.
"""

from __future__ import annotations

import re
from collections import Counter

from memd.engine.base import Item, Section
from memd.engine.text import _SPEAKER, Vector, Weights, add_into, cosine, speakers, terms, vocabulary


def title(items: list[Item]) -> str:
    words = vocabulary([item.text for item in items])
    weights = Weights(words)
    total: Vector = {}
    for w in words:
        add_into(total, weights.vector(w))
    found = keywords(items, total, 3)
    if found:
        return " ".join(k.capitalize() for k in found)
    # Text in a script without spaces (Chinese, Japanese) has no keyword
    # of three letters: its own first words name it better than "Notes".
    first = " ".join(items[0].text.split()[:5])[:24] if items else ""
    return first if any(c.isalpha() and not c.isascii() for c in first) else "Notes"


def summary(sections: list[Section]) -> str:
    items = [item for section in sections for item in section.items]
    if not items:
        return ", ".join(s.title for s in sections)[:200]
    words = vocabulary([item.text for item in items])
    weights = Weights(words)
    vectors = [weights.vector(w) for w in words]
    centroid: Vector = {}
    for vec in vectors:
        add_into(centroid, vec)
    found = keywords(items, centroid, 5)
    representative = items[max(range(len(items)), key=lambda i: cosine(vectors[i], centroid))].text
    line = " ".join(representative.split())
    if len(line) > 120:
        line = line[:119].rsplit(" ", 1)[0].rstrip() + "…"  # cut between words
    return f"{', '.join(found)}; {line}" if found else line


def keywords(items: list[Item], weight: Vector, count: int) -> list[str]:
    """Top terms by weight x spread, shown as their most common surface
    form. In a group of several entries a keyword must recur."""
    spread: Counter[str] = Counter()
    surface: dict[str, Counter[str]] = {}
    ignore = speakers(item.text for item in items)
    for item in items:
        seen = set()
        for raw in re.findall(r"[^\W_]+", _SPEAKER.sub("", item.text, count=1).lower()):
            for stemmed in terms(raw, ignore):
                surface.setdefault(stemmed, Counter())[raw] += 1
                seen.add(stemmed)
        spread.update(seen)
    floor = 2 if len(items) >= 3 else 1
    candidates = [t for t in weight if len(t) > 2 and not t.isdigit() and spread[t] >= floor]
    if not candidates:
        candidates = [t for t in weight if len(t) > 2 and not t.isdigit()]
    ranked = sorted(candidates, key=lambda t: (-(weight[t] * spread[t]), t))
    return [surface[t].most_common(1)[0][0] if t in surface else t for t in ranked[:count]]
