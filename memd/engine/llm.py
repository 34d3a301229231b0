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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .base import Background, Block, Extracted, Item, Rewrite, Route, Section, Supersession, TopicInfo, TopicUpdate
from .client import BadOutput, ModelClient
from .extraction import unsettled_text, valid_extraction
from .fidelity import Sources, unsupported
from .gating import key, tense, unsettled_route
from .offline import OfflineEngine
from .payloads import (
    CLIP,
    clip,
    extract_limit,
    extract_payload,
    plan_payload,
    reference_limit,
    rewrite_payload,
    summary_payload,
    update_payload,
    with_partner,
)
from .placing import kept_holder, records, valid_update
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

if TYPE_CHECKING:
    from ..ask import Answer, Report
    from ..vault import Vault

T = TypeVar("T")
MAX_CATALOG = 24  # topics shown to plan (the closest ones) or merge_groups
BATCH = 12  # inputs per batched call (extraction, summaries)
MAX_SUMMARY = 300


class LLMEngine:
    name = "llm"
    provenance = "llm"
    uses_model = True

    def __init__(self, client: ModelClient, vault_meta: Path | None = None, *, gating: str | None = None) -> None:
        self.client = client
        self.vault_meta = vault_meta
        self.steps = Stepper(client, vault_meta)
        self.offline = OfflineEngine()
        self.gated = (gating or client.settings.gating) == "recurrence"
        # Seqs of this run: all it took in, those whose wording or identity
        # the model judged (near-repeats, contradictions), those it routed.
        self.fresh: set[int] = set()
        self.tensed: set[int] = set()
        self.routed: set[int] = set()
        self.steps.begin("ingest")

    def begin(self, run: str) -> None:
        self.steps.begin(run)
        self.fresh, self.tensed, self.routed = set(), set(), set()

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
        """Short texts (a chat turn, a one-line note) are settled offline: all
        their statements are kept, chatter aside. Longer ones, where choosing
        what lasts matters, go to the model in batches that fit its context."""
        results = [self.offline.extract(text) for text in texts]
        pending = [n for n, found in enumerate(results) if not self.gated or unsettled_text(texts[n], found)]

        def run(chunk: list[int]) -> None:
            for n, found in zip(chunk, self._extract(chunk, texts), strict=True):
                results[n] = found

        self.steps.in_chunks(
            pending, lambda chunk: ("extract", extract_payload(chunk, texts), extract_limit(chunk, texts)), run, BATCH
        )
        return results

    def _extract(self, chunk: list[int], texts: list[str]) -> list[list[Extracted]]:
        ids = {number: texts[n] for number, n in enumerate(chunk, start=1)}

        payload = extract_payload(chunk, texts)
        return self.steps.run(
            "extract",
            payload,
            lambda data: valid_extraction(data, ids),
            lambda: [self.offline.extract(texts[n]) for n in chunk],
            max_tokens=extract_limit(chunk, texts),
        )

    # --- buffer rewrite -------------------------------------------------------

    def rewrite(self, items: list[Item]) -> Rewrite:
        if not items:
            return Rewrite(())
        self._mark(self.fresh, items)
        chosen = tense(items) if self.gated else {key(i) for i in items}
        if not chosen:
            return self.offline.rewrite(items)
        asked = [i for i in items if key(i) in chosen]
        rest = [i for i in items if key(i) not in chosen]
        self._mark(self.tensed, asked)
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

        self.steps.in_chunks(
            list(range(len(asked))),
            lambda chunk: ("rewrite", rewrite_payload([asked[n] for n in chunk]), reference_limit(len(chunk))),
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
            for record in records(data):
                holder = kept_holder(record, keyed, [i for b in blocks for i in b.items])
                superseded.append(checked_supersession(record, keyed, holder))
                used.append(str(record["old"]))
            all_once(list(keyed), used)
            return Rewrite(tuple(blocks), tuple(superseded))

        return self.steps.run(
            "rewrite",
            rewrite_payload(items),
            valid,
            lambda: self.offline.rewrite(items),
            max_tokens=reference_limit(len(items)),
        )

    # --- routing ----------------------------------------------------------------

    def plan(self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Route]:
        scored = self.offline.plan_scored(blocks, topics, background)
        routes = [s.route for s in scored]
        count = background.topics if background is not None else len(topics)
        asked = [
            n
            for n, s in enumerate(scored)
            if not self.gated or self._has(self.tensed, blocks[n].items) or unsettled_route(s, count)
        ]
        if not asked:
            return routes
        for n in asked:
            self._mark(self.routed, blocks[n].items)
        by_id = {t.id: t for t in topics}

        def shown(chunk: list[int]) -> list[TopicInfo]:
            ids = dict.fromkeys(c for n in chunk for c in scored[asked[n]].candidates)
            return [by_id[i] for i in ids if i in by_id][:MAX_CATALOG]

        def run(chunk: list[int]) -> None:
            picked = [asked[n] for n in chunk]
            plan = self._plan([blocks[n] for n in picked], shown(chunk), topics, background)
            for n, route in zip(picked, plan, strict=True):
                routes[n] = Route(n, route.topic, route.new_title)

        self.steps.in_chunks(
            list(range(len(asked))),
            lambda chunk: (
                "plan",
                plan_payload([blocks[asked[n]] for n in chunk], shown(chunk)),
                24 * len(chunk) + 40,
            ),
            run,
        )
        return routes

    def _plan(
        self, blocks: list[Block], shown: list[TopicInfo], topics: list[TopicInfo], background: Background | None
    ) -> list[Route]:
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
            plan_payload(blocks, shown),
            valid,
            lambda: self.offline.plan(blocks, topics, background),
            max_tokens=24 * len(blocks) + 40,
        )

    # --- topic maintenance -------------------------------------------------------

    def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
        existing = [i for s in sections for i in s.items]
        # Placing routine entries into sections is the offline rules' job even
        # after the model chose the topic; the model sees only near-repeats
        # and contradiction candidates.
        if self.gated and not self._has(self.tensed, block.items) and not tense(block.items, existing):
            return self.offline.update_topic(sections, block)
        self._mark(self.tensed, block.items)
        payload = update_payload(sections, block)
        limit = reference_limit(len(block.items))
        if not self.steps.fits("update_topic", payload, limit):
            payload = update_payload(sections, block, related=0)
        if not self.steps.fits("update_topic", payload, limit) and len(block.items) > 1:
            # Too many new entries for one prompt: place them in two rounds.
            half = len(block.items) // 2
            first = self.update_topic(sections, Block(block.title, block.items[:half]))
            second = self.update_topic(list(first.sections), Block(block.title, block.items[half:]))
            return TopicUpdate(second.sections, (*first.superseded, *second.superseded))
        return self.steps.run(
            "update_topic",
            payload,
            lambda data: valid_update(data, sections, block),
            lambda: self.offline.update_topic(sections, block),
            max_tokens=limit,
        )

    def split(self, section: Section, parts: int) -> list[Section]:
        if self.gated and not self._has(self.tensed, section.items):
            return self.offline.split(section, parts)
        keyed = {key(i): i for i in section.items}
        payload = {
            "title": section.title,
            "parts": parts,
            "entries": [{"seqs": [k], "text": clip(i.text, 160)} for k, i in keyed.items()],
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
            max_tokens=reference_limit(len(keyed)),
        )

    def merge_groups(
        self, topics: list[TopicInfo], limit_tokens: int, background: Background | None = None
    ) -> list[list[str]]:
        small = [t for t in topics if t.tokens < limit_tokens]
        if self.gated:
            small = with_partner(small)
        small = small[:MAX_CATALOG]
        if len(small) < 2:
            return self.offline.merge_groups(topics, limit_tokens, background)
        ids = {t.id for t in small}
        payload = {"topics": [{"id": t.id, "summary": clip(t.summary, CLIP), "tokens": t.tokens} for t in small]}

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
            lambda: self.offline.merge_groups(topics, limit_tokens, background),
            max_tokens=12 * len(small) + 40,
        )

    def summarise(self, sections: list[Section]) -> str:
        return self.summarise_many([sections])[0]

    def summarise_many(self, topics: list[list[Section]]) -> list[str]:
        results: list[str | None] = [None] * len(topics)
        asked = [n for n, secs in enumerate(topics) if not self.gated or self._summary_unsettled(secs)]

        def run(chunk: list[int]) -> None:
            picked = [asked[n] for n in chunk]
            for n, summary in zip(picked, self._summarise([topics[n] for n in picked]), strict=True):
                results[n] = summary

        self.steps.in_chunks(
            list(range(len(asked))),
            lambda chunk: ("summarise", summary_payload([topics[asked[n]] for n in chunk]), 90 * len(chunk) + 30),
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
            summary_payload(topics),
            valid,
            lambda: [self.offline.summarise(s) for s in topics],
            max_tokens=90 * len(topics) + 30,
        )

    def title(self, items: list[Item]) -> str:
        if self.gated and not self._has(self.tensed | self.routed, items):
            return self.offline.title(items)
        texts = [i.text for i in items]
        payload = {"entries": [clip(t, CLIP) for t in texts][:30]}
        return self.steps.run(
            "title",
            payload,
            lambda d: title_of(d.get("title"), texts),
            lambda: self.offline.title(items),
            max_tokens=40,
        )

    # --- helpers -------------------------------------------------------------------

    @staticmethod
    def _mark(seqs: set[int], items: Sequence[Item]) -> None:
        seqs.update(s for i in items for s in i.seqs)

    @staticmethod
    def _has(seqs: set[int], items: Sequence[Item]) -> bool:
        return any(s in seqs for i in items for s in i.seqs)

    def _summary_unsettled(self, sections: list[Section]) -> bool:
        """A topic whose content the model judged, or a new one it routed
        (its summary will steer the routing of what comes next)."""
        items = [i for s in sections for i in s.items]
        if self._has(self.tensed, items):
            return True
        new = all(s in self.fresh for i in items for s in i.seqs)
        return new and self._has(self.routed, items)
