"""The model-backed engine: each judgement step is a prompt to a language model.

The model is never trusted (steps.py: bounded calls, strict validation, one
retry, then the offline step; fidelity.py: its words must be its sources'
words). Entry metadata (seqs, times, sources, provenance) always comes from
memd; the model chooses groupings, routes and placements, and replies with
references (seqs, ids, sentence copies) rather than rewritten text.

With recurrence gating (the default) the model only sees what the offline
rules cannot settle (gating.py); the rest goes the offline way unasked.

This module holds the engine's choices: which inputs the model sees, in what
batches, and what answers when it fails. What a step shows the model is in
payloads.py, and how its reply is checked in replies.py (extraction.py and
placing.py for extraction and topic updates).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memd.engine.base import (
    Background,
    Block,
    Extracted,
    Item,
    Rewrite,
    Route,
    Section,
    Supersession,
    TopicInfo,
    TopicUpdate,
)
from memd.engine.client import ModelClient
from memd.engine.extraction import unsettled_text, valid_extraction
from memd.engine.fidelity import Sources
from memd.engine.gating import key, tense, unsettled_route
from memd.engine.offline import OfflineEngine
from memd.engine.payloads import (
    TITLE_LIMIT,
    extract_limit,
    extract_payload,
    merge_limit,
    merge_payload,
    plan_limit,
    plan_payload,
    reference_limit,
    rewrite_payload,
    split_payload,
    summary_limit,
    summary_payload,
    title_payload,
    update_payload,
    with_partner,
)
from memd.engine.placing import valid_update
from memd.engine.replies import valid_groups, valid_rewrite, valid_routes, valid_split, valid_summaries
from memd.engine.steps import Stepper, title_of

MAX_CATALOG = 24  # topics shown to plan (the closest ones) or merge_groups
BATCH = 12  # inputs per batched call (extraction, summaries)


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
        return self.steps.run(
            "rewrite",
            rewrite_payload(items),
            lambda data: valid_rewrite(data, keyed),
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
                plan_limit(len(chunk)),
            ),
            run,
        )
        return routes

    def _plan(
        self, blocks: list[Block], shown: list[TopicInfo], topics: list[TopicInfo], background: Background | None
    ) -> list[Route]:
        ids = {t.id for t in topics}
        return self.steps.run(
            "plan",
            plan_payload(blocks, shown),
            lambda data: valid_routes(data, blocks, ids),
            lambda: self.offline.plan(blocks, topics, background),
            max_tokens=plan_limit(len(blocks)),
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

    def split(self, section: Section, parts: int, *, named: bool = True) -> list[Section]:
        # The model names the pieces in the same answer, and so does the offline engine in its
        # place here (a title asked for later might be one more call): ``named`` changes nothing.
        if self.gated and not self._has(self.tensed, section.items):
            return self.offline.split(section, parts)
        keyed = {key(i): i for i in section.items}
        return self.steps.run(
            "split",
            split_payload(section.title, keyed, parts),
            lambda data: valid_split(data, keyed),
            lambda: self.offline.split(section, parts),
            max_tokens=reference_limit(len(keyed)),
        )

    def arrange(self, sections: list[Section], sizes: list[int], target: int) -> list[int]:
        return self.offline.arrange(sections, sizes, target)

    def gather(self, items: list[Item]) -> list[Block]:
        return self.offline.gather(items)  # names said again and again: the offline rules read them

    def refile(self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Route]:
        return self.offline.refile(blocks, topics, background)  # every run: by the offline rules, no model call

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
        return self.steps.run(
            "merge_groups",
            merge_payload(small),
            lambda data: valid_groups(data, ids),
            lambda: self.offline.merge_groups(topics, limit_tokens, background),
            max_tokens=merge_limit(len(small)),
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
            lambda chunk: ("summarise", summary_payload([topics[asked[n]] for n in chunk]), summary_limit(len(chunk))),
            run,
            BATCH,
        )
        return [r if r is not None else self.offline.summarise(topics[n]) for n, r in enumerate(results)]

    def _summarise(self, topics: list[list[Section]]) -> list[str]:
        sources = [Sources([*(s.title for s in secs), *(i.text for s in secs for i in s.items)]) for secs in topics]
        return self.steps.run(
            "summarise",
            summary_payload(topics),
            lambda data: valid_summaries(data, sources),
            lambda: [self.offline.summarise(s) for s in topics],
            max_tokens=summary_limit(len(topics)),
        )

    def title(self, items: list[Item]) -> str:
        if self.gated and not self._has(self.tensed | self.routed, items):
            return self.offline.title(items)
        texts = [i.text for i in items]
        return self.steps.run(
            "title",
            title_payload(texts),
            lambda d: title_of(d.get("title"), texts),
            lambda: self.offline.title(items),
            max_tokens=TITLE_LIMIT,
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
