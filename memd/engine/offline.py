"""The offline engine: deterministic rules and lexical statistics, no model.

Every decision here is explainable from the words of the entries: tf-idf
vectors, cosine similarity and BM25-style fit with fixed thresholds. The
duplicate and supersession rules it applies live in ``rules.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..errors import FormatError
from ..timeutil import parse_time
from .base import Block, Extracted, Item, Rewrite, Route, Scored, Section, TopicInfo, TopicUpdate
from .rules import fold_duplicates, fold_into_existing, is_filler, supersede
from .text import _SPEAKER, Vector, Weights, add_into, cosine, normalised, speakers, terms

# Similarity thresholds (cosine of tf-idf vectors). Group: an entry joins a
# running group; route: a block joins an existing topic; place: an entry
# joins a section; merge: two small topics become one. Route is a coverage
# fit (see plan), the others cosines.
GROUP_THRESHOLD = 0.16
CONTINUITY_BONUS = 0.12  # consecutive entries usually continue one subject
ROUTE_THRESHOLD = 0.08
PLACE_THRESHOLD = 0.12
MERGE_THRESHOLD = 0.30
CANDIDATES = 8  # topics a scored route names as the closest ones
MIN_GROUP = 3
FRAGMENT_MIN = 0.05  # a fragment joins a group only if they share something
LOW_CONTENT = 3  # fewer distinct content terms than this: a remark, not a memory

if TYPE_CHECKING:
    from ..ask import Answer, Report
    from ..vault import Vault

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")


class OfflineEngine:
    name = "offline"
    provenance = "offline"
    uses_model = False

    def begin(self, run: str) -> None:
        pass

    def drain_notes(self) -> list[str]:
        return []

    def ask(self, vault: Vault, question: str, *, budget: int | None = None, report: Report | None = None) -> Answer:
        """The extractive answer: the best matching entries, quoted and cited."""
        from ..ask import EVIDENCE_TOKENS
        from ..ask import ask as offline_ask

        return offline_ask(vault, question, budget or EVIDENCE_TOKENS)

    # --- extraction -----------------------------------------------------

    def extract(self, text: str) -> list[Extracted]:
        """One entry per informative sentence; greetings, thanks and bare
        acknowledgements are dropped."""
        found = []
        for sentence in _SENTENCE.split(text):
            cleaned = " ".join(sentence.split())
            if cleaned and not is_filler(cleaned):
                found.append(Extracted(cleaned))
        return found

    def extract_batch(self, texts: list[str]) -> list[list[Extracted]]:
        return [self.extract(text) for text in texts]

    # --- buffer rewrite -------------------------------------------------

    def rewrite(self, items: list[Item]) -> Rewrite:
        kept, superseded = supersede(fold_duplicates(items))
        return Rewrite(tuple(self._group(kept)), tuple(superseded))

    def _group(self, items: list[Item]) -> list[Block]:
        if not items:
            return []
        words = vocabulary([item.text for item in items])
        weights = Weights(words)
        vectors = [weights.vector(w) for w in words]
        groups: list[list[int]] = []
        centroids: list[Vector] = []
        owner: list[int] = []
        times = [_moment(item) for item in items]
        for i, vec in enumerate(vectors):
            best, best_score = -1, GROUP_THRESHOLD
            # The previous entry's group gets a bonus only within one sitting:
            # after a break, the next entry joins a group on its own merits.
            follows = i > 0 and _same_sitting(times[i - 1], times[i])
            for g, centroid in enumerate(centroids):
                bonus = CONTINUITY_BONUS if follows and owner[-1] == g else 0.0
                score = cosine(vec, normalised(centroid)) + bonus
                if score >= best_score:
                    best, best_score = g, score
            if best < 0:
                groups.append([])
                centroids.append({})
                best = len(groups) - 1
            groups[best].append(i)
            add_into(centroids[best], vec)
            owner.append(best)
        # Fold fragments into the most similar real group so one stray
        # remark does not become a topic of its own.
        big = [g for g, members in enumerate(groups) if len(members) >= MIN_GROUP]
        if big:
            for g, members in enumerate(groups):
                if len(members) >= MIN_GROUP:
                    continue
                score, target = max((cosine(normalised(centroids[g]), normalised(centroids[b])), b) for b in big)
                if score < FRAGMENT_MIN and all(len(set(words[i])) < LOW_CONTENT for i in members):
                    # A remark with almost no content ("Bye, Mel!") belongs
                    # with the conversation around it.
                    neighbours = [owner[i + d] for i in members for d in (-1, 1) if 0 <= i + d < len(owner)]
                    target = next((n for n in neighbours if n in big), target)
                    score = FRAGMENT_MIN
                if score >= FRAGMENT_MIN:
                    groups[target].extend(members)
                    groups[g] = []
        blocks = []
        for members in sorted((sorted(m) for m in groups if m), key=lambda m: m[0]):
            chosen = [items[i] for i in members]
            blocks.append(Block(self.title(chosen), tuple(chosen)))
        return blocks

    # --- planning -------------------------------------------------------

    def plan(self, blocks: list[Block], topics: list[TopicInfo]) -> list[Route]:
        """Route by how well a topic covers the block's words, BM25-style: each
        shared word counts by its rarity, saturating with its frequency in the
        topic, discounted for topics longer than average (a big topic knows
        many words without being about all of them)."""
        return [scored.route for scored in self.plan_scored(blocks, topics)]

    def plan_scored(self, blocks: list[Block], topics: list[TopicInfo]) -> list[Scored]:
        """``plan`` with each route's fit and the runner-up's, so a caller can
        tell a clear decision from a close one."""
        texts = ["\n".join(item.text for item in block.items) for block in blocks]
        texts += [f"{topic.summary}\n{topic.text}" for topic in topics]
        everything = vocabulary(texts)
        weights = Weights(everything)
        block_words = [set(w) for w in everything[: len(blocks)]]
        topic_counts = [Counter(w) for w in everything[len(blocks) :]]
        average = sum(sum(c.values()) for c in topic_counts) / len(topic_counts) if topic_counts else 1.0
        planned: list[tuple[str, Counter[str]]] = []  # new topics opened by this plan
        routes = []
        for i, words in enumerate(block_words):
            fits = sorted(
                ((_fit(words, counts, weights, average), t.id) for counts, t in zip(topic_counts, topics, strict=True)),
                reverse=True,
            )
            best = fits[0] if fits else (0.0, "")
            second = fits[1][0] if len(fits) > 1 else 0.0
            fresh = max(
                ((_fit(words, counts, weights, average), title) for title, counts in planned), default=(0.0, "")
            )
            if best[0] >= ROUTE_THRESHOLD and best[0] >= fresh[0]:
                route = Route(i, best[1])
            elif fresh[0] >= ROUTE_THRESHOLD:
                route = Route(i, None, fresh[1])
            else:
                planned.append((blocks[i].title, Counter(everything[i])))
                route = Route(i, None, blocks[i].title)
            routes.append(Scored(route, best[0], second, tuple(t for _, t in fits[:CANDIDATES])))
        return routes

    # --- topic maintenance ----------------------------------------------

    def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
        existing = [(s, item) for s, section in enumerate(sections) for item in section.items]
        incoming, superseded = fold_into_existing(existing, list(block.items))
        replaced = {str(old.seqs) for old, _ in incoming if old is not None}
        lists = [[item for item in section.items if str(item.seqs) not in replaced] for section in sections]
        dropped = {str(s.old) for s in superseded}
        lists = [[item for item in items if str(item.seqs) not in dropped] for items in lists]
        texts = ["\n".join([sec.title, *(i.text for i in items)]) for sec, items in zip(sections, lists, strict=True)]
        everything = vocabulary(texts + [item.text for _, item in incoming])
        words, new_words = everything[: len(texts)], everything[len(texts) :]
        weights = Weights(everything)
        centroids = [weights.vector(w) for w in words]
        new_section: list[Item] = []
        for (old, item), item_words in zip(incoming, new_words, strict=True):
            if old is not None:  # a duplicate of an existing entry: take its place
                s = next(s for s, it in existing if it is old)
                lists[s].append(item)
                continue
            vec = weights.vector(item_words)
            scores = [(cosine(vec, c), s) for s, c in enumerate(centroids)]
            score, target = max(scores, default=(0.0, -1))
            if score >= PLACE_THRESHOLD:
                lists[target].append(item)
            else:
                new_section.append(item)
        result = [Section(sec.title, tuple(items)) for sec, items in zip(sections, lists, strict=True)]
        if new_section:
            title = block.title if block.title not in {s.title for s in sections} else self.title(new_section)
            result.append(Section(title, tuple(new_section)))
        return TopicUpdate(tuple(result), tuple(superseded))

    def split(self, section: Section, parts: int) -> list[Section]:
        items = list(section.items)
        if parts < 2 or len(items) < 2:
            return [section]
        words = vocabulary([item.text for item in items])
        weights = Weights(words)
        vectors = [weights.vector(w) for w in words]
        # Seeds spread out by farthest-point selection, then a few rounds of
        # k-means on the unit vectors; deterministic for the same input.
        seeds = [0]
        while len(seeds) < min(parts, len(items)):
            seeds.append(min(range(len(items)), key=lambda i: max(cosine(vectors[i], vectors[s]) for s in seeds)))
        centres = [dict(vectors[s]) for s in seeds]
        assignment = [0] * len(items)
        for _ in range(6):
            assignment = [max(range(len(centres)), key=lambda c: cosine(v, centres[c])) for v in vectors]
            for c in range(len(centres)):
                total: Vector = {}
                for v, a in zip(vectors, assignment, strict=True):
                    if a == c:
                        add_into(total, v)
                centres[c] = normalised(total) if total else centres[c]
        clusters = [[items[i] for i in range(len(items)) if assignment[i] == c] for c in range(len(centres))]
        clusters = [c for c in clusters if c]
        if len(clusters) < 2:  # no lexical structure: fall back to time order
            half = len(items) // 2
            clusters = [items[:half], items[half:]]
        return [Section(self.title(c), tuple(c)) for c in clusters]

    def merge_groups(self, topics: list[TopicInfo], limit_tokens: int) -> list[list[str]]:
        small = [t for t in topics if t.tokens < limit_tokens]
        if len(small) < 2:
            return []
        words = vocabulary([f"{t.summary}\n{t.text}" for t in small])
        weights = Weights(words)
        vectors = [weights.vector(w) for w in words]
        pairs = sorted(
            ((cosine(vectors[i], vectors[j]), i, j) for i in range(len(small)) for j in range(i + 1, len(small))),
            reverse=True,
        )
        used: set[int] = set()
        groups = []
        for score, i, j in pairs:
            if score < MERGE_THRESHOLD:
                break
            if i in used or j in used or small[i].tokens + small[j].tokens >= limit_tokens * 2:
                continue
            used.update((i, j))
            keep, absorb = (i, j) if small[i].tokens >= small[j].tokens else (j, i)
            groups.append([small[keep].id, small[absorb].id])
        return groups

    def summarise(self, sections: list[Section]) -> str:
        items = [item for section in sections for item in section.items]
        if not items:
            return ", ".join(s.title for s in sections)[:200]
        words = vocabulary([item.text for item in items])
        weights = Weights(words)
        vectors = [weights.vector(w) for w in words]
        centroid: Vector = {}
        for vec in vectors:
            add_into(centroid, vec)
        keywords = self._keywords(items, centroid, 5)
        representative = items[max(range(len(items)), key=lambda i: cosine(vectors[i], centroid))].text
        line = " ".join(representative.split())
        if len(line) > 120:
            line = line[:119].rsplit(" ", 1)[0].rstrip() + "…"  # cut between words
        return f"{', '.join(keywords)}; {line}" if keywords else line

    def summarise_many(self, topics: list[list[Section]]) -> list[str]:
        return [self.summarise(sections) for sections in topics]

    def title(self, items: list[Item]) -> str:
        words = vocabulary([item.text for item in items])
        weights = Weights(words)
        total: Vector = {}
        for w in words:
            add_into(total, weights.vector(w))
        keywords = self._keywords(items, total, 3)
        if keywords:
            return " ".join(k.capitalize() for k in keywords)
        # Text in a script without spaces (Chinese, Japanese) has no keyword
        # of three letters: its own first words name it better than "Notes".
        first = " ".join(items[0].text.split()[:5])[:24] if items else ""
        return first if any(c.isalpha() and not c.isascii() for c in first) else "Notes"

    @staticmethod
    def _keywords(items: list[Item], weight: Vector, count: int) -> list[str]:
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


# --- rules shared by the rewrite and topic update steps -----------------------


SITTING = timedelta(hours=2)


def _moment(item: Item) -> datetime | None:
    try:
        return parse_time(item.signature.time) if item.signature.time else None
    except FormatError:
        return None


def _same_sitting(a: datetime | None, b: datetime | None) -> bool:
    """Unknown times count as one sitting (no evidence of a break)."""
    return a is None or b is None or abs(b - a) <= SITTING


def vocabulary(texts: list[str]) -> list[list[str]]:
    """Terms of each text, leaving out the names of the transcript's speakers."""
    ignore = speakers(texts)
    return [terms(text, ignore) for text in texts]


def _fit(words: set[str], counts: Counter[str], weights: Weights, average: float) -> float:
    """Share of the block's idf mass a topic covers, each word saturating with
    its count in the topic (k1 = 1.2) and discounted by topic length (b = 0.75)."""
    total = sum(weights.idf(t) for t in words)
    if not total:
        return 0.0
    length = sum(counts.values()) / (average or 1.0)
    norm = 1.2 * (0.25 + 0.75 * length)
    return sum(weights.idf(t) * counts[t] * 2.2 / (counts[t] + norm) for t in words if counts[t]) / (2.2 * total)
