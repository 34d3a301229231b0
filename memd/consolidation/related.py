"""Which topics a topic is related to, and the Obsidian properties that say so.

A topic's ``related`` property lists the few other topics that share its
people and subjects most, as ``[[wikilinks]]``, so Obsidian's graph and
backlinks join them; ``aliases`` holds its title (``[[Melanie — pottery]]``
opens it) and ``tags`` the people and named things most of it is about.

Relatedness is the same word statistics routing uses (``TopicIndex.ranked``,
BM25-style): a topic's heaviest terms, names counting twice, are the query,
and a topic is related when it scores at least ``SHARE`` of the best other
topic. Speakers of transcripts are no subject (they are in every topic of a
conversation). Only topics a consolidation touched are refreshed; the others
keep what they had until they change.

``related`` is memd's: rewritten each time. ``tags`` and ``aliases`` may be a
person's too: memd adds to them and never removes an item.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from memd.core.timeutil import DAY_NAMES, MONTH_NAMES
from memd.engine.base import TopicIndex
from memd.engine.text import Weights, speakers, terms
from memd.engine.themes import names, topic_subject

RELATED = 3  # topics listed at most
QUERY_TERMS = 12  # the heaviest terms of a topic that say what it is about
SHARE = 0.5  # a related topic scores at least this share of the best one
TAGS = 3  # tags memd adds at most
_TAG = re.compile(r"[^\w/-]+")


def related(index: TopicIndex, topic_ids: list[str]) -> dict[str, list[str]]:
    """For each topic of ``topic_ids``: the ids of the topics related to it, closest first."""
    infos = index.infos(topic_ids)
    if not infos:
        return {}
    ignore = index.speakers()
    count, length = index.totals(ignore)
    found_terms = [terms(f"{info.summary}\n{info.text}", ignore) for info in infos]
    frequencies = index.frequencies({t for words in found_terms for t in words}, ignore)
    weights = Weights.of(frequencies, max(count, 1))
    queries: list[Mapping[str, float]] = []
    for info, words in zip(infos, found_terms, strict=True):
        named = {t for name in names(info.text) for t in terms(name, ignore)}
        scored = {t: weights.idf(t) * (2.0 if t in named else 1.0) for t in set(words) if weights.idf(t) > 0}
        heaviest = sorted(scored, key=lambda t: (-scored[t], t))[:QUERY_TERMS]
        queries.append({t: scored[t] for t in heaviest})
    out: dict[str, list[str]] = {}
    ranked = index.ranked(queries, (length / count) if count else 1.0, ignore, RELATED + 1, 1e-9)
    for info, found in zip(infos, ranked, strict=True):
        others = [(score, topic_id) for score, topic_id in found if topic_id != info.id]
        if not others:
            out[info.id] = []
            continue
        best = others[0][0]
        out[info.id] = [topic_id for score, topic_id in others[:RELATED] if score >= SHARE * best]
    return out


def tags_of(text: str, speaking: frozenset[str] | None = None) -> list[str]:
    """Whom a topic is about (the speaker of most of its turns) and the names
    most of its entries mention, as Obsidian tags (lowercase, no spaces).
    ``speaking``: the labels that name speakers (``subjects.talking``); a label
    heading notes ("Correction:", "Laptop:") is no one. A month or a day is
    when, not what about ("3 March")."""
    lines = [line for line in text.splitlines() if line.strip()]
    counted = Counter(name for line in lines for name in names(line) if name not in _CALENDAR)
    least = max(2, len(lines) // 10)
    who = topic_subject(text)
    if who is not None and speaking is not None and who not in speaking:
        who = None
    # The other people of a conversation are named in it as they are spoken to ("Thanks, Mel!"): not what it is about.
    talking = {name.lower() for name in speakers(lines)} - ({who.lower()} if who else set())
    named = [name for name, n in counted.most_common() if n >= least and name not in talking]
    chosen = ([who.lower()] if who else []) + named
    tags = [tag for name in chosen if (tag := _TAG.sub("-", name).strip("-")) and not tag.isdigit()]
    return list(dict.fromkeys(tags))[:TAGS]


_CALENDAR = frozenset(name.lower() for name in (*MONTH_NAMES, *DAY_NAMES))


def with_links(data: dict[str, Any], title: str | None, related_ids: list[str], tags: list[str]) -> dict[str, Any]:
    """Frontmatter ``data`` with memd's ``related``, and its ``aliases`` and
    ``tags`` added to a person's (never removed)."""
    out = dict(data)
    if related_ids:
        out["related"] = [f"[[{topic_id}]]" for topic_id in related_ids]
    else:
        out.pop("related", None)
    for key, extra in (("aliases", [title] if title else []), ("tags", tags)):
        have = out.get(key)
        items = [str(v) for v in have] if isinstance(have, list) else ([str(have)] if have else [])
        added = [v for v in extra if v not in items]
        if added or (have is not None and not isinstance(have, list)):
            out[key] = items + added
    return out
