"""What each model step is shown, and how long its reply may be.

Prompts carry only what a step needs to decide: the gist of entries (clipped
between words), the closest topics, and, for placing entries in a topic, the
section titles and the few existing entries that share words with the new
ones. Replies are references (seqs, ids), so their length follows the number
of entries, not their text.
"""

from __future__ import annotations

import math
from typing import Any

from memd.engine.base import Block, Item, Section, TopicInfo
from memd.engine.clustering import MERGE_THRESHOLD
from memd.engine.gating import key
from memd.engine.sizes import model_tokens
from memd.engine.text import Weights, cosine, vocabulary

BLOCK_ENTRIES = 5  # entries of a block shown to plan
RELATED = 3  # existing entries shown per new entry to update_topic
CLIP = 160  # characters of an entry shown where only its gist matters
SUMMARY_ENTRIES = 6


def clip(text: str, limit: int = CLIP) -> str:
    """At most ``limit`` characters, cut between words (a cut word would read
    as a word its sources do not have)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def extract_payload(chunk: list[int], texts: list[str]) -> dict[str, Any]:
    return {"texts": [{"id": number, "text": texts[n]} for number, n in enumerate(chunk, start=1)]}


def extract_limit(chunk: list[int], texts: list[str]) -> int:
    # The reply copies the statements worth keeping: at most the input again.
    return math.ceil(1.2 * sum(model_tokens(texts[n]) for n in chunk)) + 16 * len(chunk) + 32


def reference_limit(count: int) -> int:
    """Replies made of seq references (and a title per block)."""
    return 14 * count + 80


def plan_limit(count: int) -> int:
    return 24 * count + 40


def merge_limit(count: int) -> int:
    return 12 * count + 40


def summary_limit(count: int) -> int:
    return 90 * count + 30


TITLE_LIMIT = 40


def rewrite_payload(items: list[Item]) -> dict[str, Any]:
    return {
        "entries": [
            {"seq": key(i), "time": i.signature.time, "source": i.signature.source, "text": i.text} for i in items
        ]
    }


def plan_payload(blocks: list[Block], topics: list[TopicInfo]) -> dict[str, Any]:
    return {
        "blocks": [
            {"block": n, "title": b.title, "entries": [clip(i.text) for i in b.items][:BLOCK_ENTRIES]}
            for n, b in enumerate(blocks)
        ],
        "topics": [{"id": t.id, "summary": clip(t.summary)} for t in topics],
    }


def split_payload(title: str, keyed: dict[str, Item], parts: int) -> dict[str, Any]:
    """The section to split, its entries by the keys the reply must name (``keyed``)."""
    return {
        "title": title,
        "parts": parts,
        "entries": [{"seqs": [k], "text": clip(i.text, 160)} for k, i in keyed.items()],
    }


def merge_payload(topics: list[TopicInfo]) -> dict[str, Any]:
    return {"topics": [{"id": t.id, "summary": clip(t.summary, CLIP), "tokens": t.tokens} for t in topics]}


def title_payload(texts: list[str]) -> dict[str, Any]:
    return {"entries": [clip(t, CLIP) for t in texts][:30]}


def update_payload(sections: list[Section], block: Block, related: int = RELATED) -> dict[str, Any]:
    """Every section's title, and only the existing entries that share words
    with a new one: the model places by reference, it need not see the rest."""
    shown = _related(sections, block, related)
    return {
        "sections": [
            {
                "title": s.title,
                "size": len(s.items),
                "entries": [{"seqs": [key(i)], "text": clip(i.text)} for i in s.items if key(i) in shown],
            }
            for s in sections
        ],
        "new": [
            {"seqs": [key(i)], "time": i.signature.time, "source": i.signature.source, "text": i.text}
            for i in block.items
        ],
    }


def _related(sections: list[Section], block: Block, per_item: int) -> set[str]:
    if not per_item:
        return set()
    existing = [i for s in sections for i in s.items]
    if not existing:
        return set()
    words = vocabulary([i.text for i in existing] + [i.text for i in block.items])
    weights = Weights(words)
    vectors = [weights.vector(w) for w in words]
    old, new = vectors[: len(existing)], vectors[len(existing) :]
    shown: set[str] = set()
    for vec in new:
        ranked = sorted(range(len(old)), key=lambda n: -cosine(vec, old[n]))
        shown.update(key(existing[n]) for n in ranked[:per_item] if cosine(vec, old[n]) > 0)
    return shown


def summary_payload(topics: list[list[Section]]) -> dict[str, Any]:
    out = []
    for number, sections in enumerate(topics):
        items = [(s.title, i) for s in sections for i in s.items]
        step = max(1, math.ceil(len(items) / SUMMARY_ENTRIES))
        picked = items[::step][:SUMMARY_ENTRIES]
        titles = list(dict.fromkeys(s.title for s in sections if s.title))
        out.append({"id": number, "sections": titles, "entries": [clip(i.text) for _, i in picked]})
    return {"topics": out}


def with_partner(topics: list[TopicInfo]) -> list[TopicInfo]:
    """Small topics with at least one lexically close small topic: the only
    ones a merge could be about."""
    if len(topics) < 2:
        return []
    words = vocabulary([f"{t.summary}\n{t.text}" for t in topics])
    weights = Weights(words)
    vectors = [weights.vector(w) for w in words]
    close = {
        n
        for n in range(len(topics))
        for m in range(len(topics))
        if n != m and cosine(vectors[n], vectors[m]) >= MERGE_THRESHOLD / 2
    }
    return [t for n, t in enumerate(topics) if n in close]
