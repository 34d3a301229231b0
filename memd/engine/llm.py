"""The model-backed engine: each judgement step is a prompt to a language model.

The model is never trusted (steps.py: bounded calls, strict validation, one
retry, then the offline step; fidelity.py: its words must be its sources'
words). Entry metadata (seqs, times, sources, provenance) always comes from
memd; the model chooses groupings, routes and placements, and replies with
references (seqs, ids, sentence copies) rather than rewritten text.

With recurrence gating (the default) the model only sees what the offline
rules cannot settle (gating.py); the rest goes the offline way unasked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..prompts import normal
from .base import Block, Extracted, Item, Rewrite, Route, Section, Supersession, TopicInfo, TopicUpdate
from .client import BadOutput, ModelClient, model_tokens
from .fidelity import Sources, sentences, unsupported
from .gating import key, tense, unsettled_route
from .offline import MERGE_THRESHOLD, OfflineEngine, vocabulary
from .steps import (
    Stepper,
    all_once,
    checked_supersession,
    field,
    listed,
    merged_entry,
    seqs_of,
    text_of,
    title_of,
)
from .text import Weights, cosine

if TYPE_CHECKING:
    from ..ask import Answer, Report
    from ..vault import Vault

T = TypeVar("T")
MAX_CATALOG = 40  # topics shown to plan (the closest ones) or merge_groups
BLOCK_ENTRIES = 8  # entries of a block shown to plan
RELATED = 3  # existing entries shown per new entry to update_topic
CLIP = 240  # characters of an entry shown where only its gist matters
SUMMARY_ENTRIES = 12
BATCH = 12  # inputs per batched call (extraction, summaries)
MAX_SUMMARY = 300


class LLMEngine:
    name = "llm"

    def __init__(self, client: ModelClient, vault_meta: Path | None = None, *, gating: str | None = None) -> None:
        self.client = client
        self.vault_meta = vault_meta
        self.steps = Stepper(client, vault_meta)
        self.offline = OfflineEngine()
        self.gated = (gating or client.settings.gating) == "recurrence"
        self.judged: set[int] = set()  # seqs the model is judging in this run
        self.steps.begin("ingest")

    def begin(self, run: str) -> None:
        self.steps.begin(run)
        self.judged = set()

    def drain_notes(self) -> list[str]:
        return self.steps.drain()

    def ask(self, vault: Vault, question: str, *, budget: int | None = None, report: Report | None = None) -> Answer:
        from ..agent import agent_ask
        from ..ask import EVIDENCE_TOKENS

        model = self.client.settings.ask_model or None
        return agent_ask(vault, question, self.client, model=model, report=report, budget=budget or EVIDENCE_TOKENS)

    # --- extraction -----------------------------------------------------------

    def extract(self, text: str) -> list[Extracted]:
        return self.extract_batch([text])[0]

    def extract_batch(self, texts: list[str]) -> list[list[Extracted]]:
        """Texts whose offline reading is at most one plain statement are
        settled; the rest go to the model in batches that fit its context."""
        results = [self.offline.extract(text) for text in texts]
        pending = [n for n, found in enumerate(results) if not self.gated or len(found) > 1]

        def run(chunk: list[int]) -> None:
            for n, found in zip(chunk, self._extract(chunk, texts), strict=True):
                results[n] = found

        self._in_chunks(
            pending, lambda chunk: ("extract", _extract_payload(chunk, texts), _extract_limit(chunk, texts)), run, BATCH
        )
        return results

    def _extract(self, chunk: list[int], texts: list[str]) -> list[list[Extracted]]:
        ids = {number: texts[n] for number, n in enumerate(chunk, start=1)}

        def valid(data: dict[str, Any]) -> list[list[Extracted]]:
            found: dict[int, list[Extracted]] = {number: [] for number in ids}
            for entry in listed(data, "entries"):
                if not isinstance(entry, dict):
                    raise BadOutput("each entry must be an object with text")
                number = entry.get("id", 1 if len(ids) == 1 else None)
                if number not in ids:
                    raise BadOutput(f"entry id {number!r} is not one of the input ids")
                text = text_of(entry.get("text"), "entry text")
                parts = [normal(s) for s in sentences(text)]
                if len(set(parts)) < len(parts):
                    raise BadOutput(f"entry {text[:60]!r} repeats a sentence")
                problem = unsupported(text, Sources([ids[number]]))
                if problem:
                    raise BadOutput(f"text {number}: {problem}; copy statements from the text, add nothing")
                if any(normal(e.text) == normal(text) for e in found[number]):
                    raise BadOutput(f"entry {text[:60]!r} is listed twice")
                found[number].append(Extracted(text))
            return [found[number] for number in ids]

        payload = _extract_payload(chunk, texts)
        return self.steps.run(
            "extract",
            payload,
            valid,
            lambda: [self.offline.extract(texts[n]) for n in chunk],
            max_tokens=_extract_limit(chunk, texts),
        )

    # --- buffer rewrite -------------------------------------------------------

    def rewrite(self, items: list[Item]) -> Rewrite:
        if not items:
            return Rewrite(())
        chosen = tense(items) if self.gated else {key(i) for i in items}
        if not chosen:
            return self.offline.rewrite(items)
        asked = [i for i in items if key(i) in chosen]
        rest = [i for i in items if key(i) not in chosen]
        self._judge(asked)
        blocks: list[Block] = []
        superseded: list[Supersession] = []
        if rest:
            settled = self.offline.rewrite(rest)
            blocks += settled.blocks
            superseded += settled.superseded

        def run(chunk: list[int]) -> None:
            result = self._rewrite([asked[n] for n in chunk])
            blocks.extend(result.blocks)
            superseded.extend(result.superseded)

        self._in_chunks(
            list(range(len(asked))),
            lambda chunk: ("rewrite", _rewrite_payload([asked[n] for n in chunk]), _reference_limit(len(chunk))),
            run,
        )
        return Rewrite(tuple(blocks), tuple(superseded))

    def _rewrite(self, items: list[Item]) -> Rewrite:
        keyed = {key(item): item for item in items}

        def valid(data: dict[str, Any]) -> Rewrite:
            used: list[str] = []
            blocks = []
            for block in listed(data, "blocks"):
                entries = []
                for entry in listed(block, "entries"):
                    keys = seqs_of(entry, keyed)
                    used += keys
                    entries.append(merged_entry(keys, keyed, entry.get("text")))
                if entries:
                    blocks.append(Block(title_of(field(block, "title"), [i.text for i in entries]), tuple(entries)))
            superseded = []
            for record in _records(data):
                holder = _holder(record, keyed, [i for b in blocks for i in b.items])
                superseded.append(checked_supersession(record, keyed, holder))
                used.append(str(record["old"]))
            all_once(list(keyed), used)
            return Rewrite(tuple(blocks), tuple(superseded))

        return self.steps.run(
            "rewrite",
            _rewrite_payload(items),
            valid,
            lambda: self.offline.rewrite(items),
            max_tokens=_reference_limit(len(items)),
        )

    # --- routing ----------------------------------------------------------------

    def plan(self, blocks: list[Block], topics: list[TopicInfo]) -> list[Route]:
        scored = self.offline.plan_scored(blocks, topics)
        routes = [s.route for s in scored]
        asked = [
            n
            for n, s in enumerate(scored)
            if not self.gated or self._judged(blocks[n].items) or unsettled_route(s, len(topics))
        ]
        if not asked:
            return routes
        for n in asked:
            self._judge(blocks[n].items)
        by_id = {t.id: t for t in topics}

        def shown(chunk: list[int]) -> list[TopicInfo]:
            ids = dict.fromkeys(c for n in chunk for c in scored[asked[n]].candidates)
            return [by_id[i] for i in ids if i in by_id][:MAX_CATALOG]

        def run(chunk: list[int]) -> None:
            picked = [asked[n] for n in chunk]
            for n, route in zip(picked, self._plan([blocks[n] for n in picked], shown(chunk), topics), strict=True):
                routes[n] = Route(n, route.topic, route.new_title)

        self._in_chunks(
            list(range(len(asked))),
            lambda chunk: (
                "plan",
                _plan_payload([blocks[asked[n]] for n in chunk], shown(chunk)),
                24 * len(chunk) + 40,
            ),
            run,
        )
        return routes

    def _plan(self, blocks: list[Block], shown: list[TopicInfo], topics: list[TopicInfo]) -> list[Route]:
        ids = {t.id for t in topics}

        def valid(data: dict[str, Any]) -> list[Route]:
            routes: dict[int, Route] = {}
            for route in listed(data, "routes"):
                index = field(route, "block")
                if (
                    not isinstance(index, int)
                    or isinstance(index, bool)
                    or not 0 <= index < len(blocks)
                    or index in routes
                ):
                    raise BadOutput(f"route for block {index!r} is unknown or repeated")
                topic = route.get("topic")
                if topic is not None:
                    if topic not in ids:
                        raise BadOutput(f"unknown topic id {topic!r}")
                    routes[index] = Route(index, topic)
                else:
                    texts = [i.text for i in blocks[index].items]
                    routes[index] = Route(index, None, title_of(route.get("title") or blocks[index].title, texts))
            if len(routes) != len(blocks):
                raise BadOutput(f"routes given for {len(routes)} of {len(blocks)} blocks")
            return [routes[n] for n in range(len(blocks))]

        return self.steps.run(
            "plan",
            _plan_payload(blocks, shown),
            valid,
            lambda: self.offline.plan(blocks, topics),
            max_tokens=24 * len(blocks) + 40,
        )

    # --- topic maintenance -------------------------------------------------------

    def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
        existing = [i for s in sections for i in s.items]
        if self.gated and not self._judged(block.items) and not tense(block.items, existing):
            return self.offline.update_topic(sections, block)
        self._judge(block.items)
        payload = _update_payload(sections, block)
        limit = _reference_limit(len(block.items))
        if not self.steps.fits("update_topic", payload, limit):
            payload = _update_payload(sections, block, related=0)
        if not self.steps.fits("update_topic", payload, limit) and len(block.items) > 1:
            # Too many new entries for one prompt: place them in two rounds.
            half = len(block.items) // 2
            first = self.update_topic(sections, Block(block.title, block.items[:half]))
            second = self.update_topic(list(first.sections), Block(block.title, block.items[half:]))
            return TopicUpdate(second.sections, (*first.superseded, *second.superseded))
        return self.steps.run(
            "update_topic",
            payload,
            lambda data: _valid_update(data, sections, block),
            lambda: self.offline.update_topic(sections, block),
            max_tokens=limit,
        )

    def split(self, section: Section, parts: int) -> list[Section]:
        if self.gated and not self._judged(section.items):
            return self.offline.split(section, parts)
        keyed = {key(i): i for i in section.items}
        payload = {
            "title": section.title,
            "parts": parts,
            "entries": [{"seqs": [k], "text": _clip(i.text, 160)} for k, i in keyed.items()],
        }

        def valid(data: dict[str, Any]) -> list[Section]:
            used: list[str] = []
            result = []
            for piece in listed(data, "sections"):
                keys = seqs_of(piece, keyed)
                used += keys
                items = tuple(keyed[k] for k in keys)
                result.append(Section(title_of(field(piece, "title"), [i.text for i in items]), items))
            all_once(list(keyed), used)
            return result

        return self.steps.run(
            "split",
            payload,
            valid,
            lambda: self.offline.split(section, parts),
            max_tokens=_reference_limit(len(keyed)),
        )

    def merge_groups(self, topics: list[TopicInfo], limit_tokens: int) -> list[list[str]]:
        small = [t for t in topics if t.tokens < limit_tokens]
        if self.gated:
            small = _with_partner(small)
        small = small[:MAX_CATALOG]
        if len(small) < 2:
            return self.offline.merge_groups(topics, limit_tokens)
        ids = {t.id for t in small}
        payload = {"topics": [{"id": t.id, "summary": _clip(t.summary, CLIP), "tokens": t.tokens} for t in small]}

        def valid(data: dict[str, Any]) -> list[list[str]]:
            groups = []
            seen: set[str] = set()
            for group in listed(data, "groups"):
                if not isinstance(group, list) or len(group) < 2 or not set(map(str, group)) <= ids:
                    raise BadOutput(f"group {group!r} must list two or more known topic ids")
                if seen & set(map(str, group)):
                    raise BadOutput(f"group {group!r} repeats a topic of another group")
                seen |= set(map(str, group))
                groups.append([str(g) for g in group])
            return groups

        return self.steps.run(
            "merge_groups",
            payload,
            valid,
            lambda: self.offline.merge_groups(topics, limit_tokens),
            max_tokens=12 * len(small) + 40,
        )

    def summarise(self, sections: list[Section]) -> str:
        return self.summarise_many([sections])[0]

    def summarise_many(self, topics: list[list[Section]]) -> list[str]:
        results: list[str | None] = [None] * len(topics)
        asked = [
            n for n, secs in enumerate(topics) if not self.gated or self._judged([i for s in secs for i in s.items])
        ]

        def run(chunk: list[int]) -> None:
            picked = [asked[n] for n in chunk]
            for n, summary in zip(picked, self._summarise([topics[n] for n in picked]), strict=True):
                results[n] = summary

        self._in_chunks(
            list(range(len(asked))),
            lambda chunk: ("summarise", _summary_payload([topics[asked[n]] for n in chunk]), 90 * len(chunk) + 30),
            run,
            BATCH,
        )
        return [r if r is not None else self.offline.summarise(topics[n]) for n, r in enumerate(results)]

    def _summarise(self, topics: list[list[Section]]) -> list[str]:
        sources = [Sources([*(s.title for s in secs), *(i.text for s in secs for i in s.items)]) for secs in topics]

        def valid(data: dict[str, Any]) -> list[str]:
            found: dict[int, str] = {}
            for entry in listed(data, "summaries"):
                number = field(entry, "id")
                if not isinstance(number, int) or not 0 <= number < len(topics) or number in found:
                    raise BadOutput(f"summary id {number!r} is unknown or repeated")
                summary = " ".join(text_of(entry.get("summary"), "summary").split())
                if len(summary) > MAX_SUMMARY:
                    raise BadOutput(f"summary {number} is longer than {MAX_SUMMARY} characters")
                problem = unsupported(summary, sources[number])
                if problem:
                    raise BadOutput(f"summary {number}: {problem}; use the topic's own words")
                found[number] = summary
            if len(found) != len(topics):
                raise BadOutput(f"summaries given for {len(found)} of {len(topics)} topics")
            return [found[n] for n in range(len(topics))]

        return self.steps.run(
            "summarise",
            _summary_payload(topics),
            valid,
            lambda: [self.offline.summarise(s) for s in topics],
            max_tokens=90 * len(topics) + 30,
        )

    def title(self, items: list[Item]) -> str:
        if self.gated and not self._judged(items):
            return self.offline.title(items)
        texts = [i.text for i in items]
        payload = {"entries": [_clip(t, CLIP) for t in texts][:30]}
        return self.steps.run(
            "title",
            payload,
            lambda d: title_of(d.get("title"), texts),
            lambda: self.offline.title(items),
            max_tokens=40,
        )

    # --- helpers -------------------------------------------------------------------

    def _judge(self, items: Sequence[Item]) -> None:
        self.judged.update(s for i in items for s in i.seqs)

    def _judged(self, items: Sequence[Item]) -> bool:
        return any(s in self.judged for i in items for s in i.seqs)

    def _in_chunks(
        self,
        indices: list[int],
        request: Callable[[list[int]], tuple[str, dict[str, Any], int]],
        run: Callable[[list[int]], None],
        most: int | None = None,
    ) -> None:
        """Run ``run`` over consecutive chunks of ``indices`` as large as fit the
        model's context (and ``most``): work is split, never truncated."""
        start = 0
        while start < len(indices):
            end = start + 1
            while end < len(indices) and (most is None or end - start < most):
                operation, payload, limit = request(indices[start : end + 1])
                if not self.steps.fits(operation, payload, limit):
                    break
                end += 1
            run(indices[start:end])
            start = end


# --- payloads --------------------------------------------------------------------


def _clip(text: str, limit: int = CLIP) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _extract_payload(chunk: list[int], texts: list[str]) -> dict[str, Any]:
    return {"texts": [{"id": number, "text": texts[n]} for number, n in enumerate(chunk, start=1)]}


def _extract_limit(chunk: list[int], texts: list[str]) -> int:
    # The reply copies the statements worth keeping: at most the input again.
    return math.ceil(1.2 * sum(model_tokens(texts[n]) for n in chunk)) + 16 * len(chunk) + 32


def _reference_limit(count: int) -> int:
    """Replies made of seq references (and a title per block)."""
    return 14 * count + 80


def _rewrite_payload(items: list[Item]) -> dict[str, Any]:
    return {
        "entries": [
            {"seq": key(i), "time": i.signature.time, "source": i.signature.source, "text": i.text} for i in items
        ]
    }


def _plan_payload(blocks: list[Block], topics: list[TopicInfo]) -> dict[str, Any]:
    return {
        "blocks": [
            {"block": n, "title": b.title, "entries": [_clip(i.text) for i in b.items][:BLOCK_ENTRIES]}
            for n, b in enumerate(blocks)
        ],
        "topics": [{"id": t.id, "summary": _clip(t.summary)} for t in topics],
    }


def _update_payload(sections: list[Section], block: Block, related: int = RELATED) -> dict[str, Any]:
    """Every section's title, and only the existing entries that share words
    with a new one: the model places by reference, it need not see the rest."""
    shown = _related(sections, block, related)
    return {
        "sections": [
            {
                "title": s.title,
                "size": len(s.items),
                "entries": [{"seqs": [key(i)], "text": _clip(i.text)} for i in s.items if key(i) in shown],
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


def _summary_payload(topics: list[list[Section]]) -> dict[str, Any]:
    out = []
    for number, sections in enumerate(topics):
        items = [(s.title, i) for s in sections for i in s.items]
        step = max(1, math.ceil(len(items) / SUMMARY_ENTRIES))
        picked = items[::step][:SUMMARY_ENTRIES]
        titles = list(dict.fromkeys(s.title for s in sections if s.title))
        out.append({"id": number, "sections": titles, "entries": [_clip(i.text, 200) for _, i in picked]})
    return {"topics": out}


def _records(data: dict[str, Any]) -> list[Any]:
    records = data.get("superseded") or []
    if not isinstance(records, list):
        raise BadOutput("'superseded' must be a list")
    return records


def _holder(record: Any, keyed: dict[str, Item], kept: list[Item]) -> Item | None:
    new = keyed.get(str(field(record, "new")))
    if new is None:
        return None
    return next((i for i in kept if set(new.seqs) <= set(i.seqs)), None)


def _with_partner(topics: list[TopicInfo]) -> list[TopicInfo]:
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


def _valid_update(data: dict[str, Any], sections: list[Section], block: Block) -> TopicUpdate:
    existing = {key(i): i for s in sections for i in s.items}
    incoming = {key(i): i for i in block.items}
    keyed = {**existing, **incoming}
    titles = {s.title for s in sections}
    texts = [i.text for i in block.items]
    used: list[str] = []
    replaced: dict[str, Item] = {}
    removed: set[str] = set()
    appended: dict[str, list[Item]] = {}
    fresh: list[str] = []
    placed: list[Item] = []
    for place in listed(data, "place"):
        keys = seqs_of(place, keyed)
        if not any(k in incoming for k in keys):
            raise BadOutput(f"placement {keys} holds no new entry; existing entries stay where they are")
        item = merged_entry(keys, keyed, place.get("text") if isinstance(place, dict) else None)
        used += keys
        placed.append(item)
        olds = [k for k in keys if k in existing]
        if olds:
            replaced[olds[0]] = item  # a merge takes the place of the existing entry
            removed.update(olds[1:])
            continue
        title = " ".join(str(field(place, "section")).split())
        if title not in titles:
            title = title_of(title, texts)
            if title not in fresh:
                fresh.append(title)
        appended.setdefault(title, []).append(item)
    superseded = []
    for record in _records(data):
        holder = _holder(record, keyed, [*placed, *existing.values()])
        superseded.append(checked_supersession(record, keyed, holder))
        used.append(str(record["old"]))
        removed.add(str(record["old"]))
    all_once(list(incoming), [k for k in used if k in incoming])
    repeated = sorted({k for k in used if k in existing and used.count(k) > 1})
    if repeated:
        raise BadOutput(f"seqs repeated: {', '.join(repeated[:10])}")
    result = []
    for section in sections:
        items = [replaced.get(key(i), i) for i in section.items if key(i) not in removed or key(i) in replaced]
        result.append(Section(section.title, (*items, *appended.pop(section.title, []))))
    result += [Section(title, tuple(appended[title])) for title in fresh]
    return TopicUpdate(tuple(result), tuple(superseded))
