"""The engine seam: every step of memd that needs judgement.

Two implementations sit behind it: ``offline`` (deterministic rules and
lexical statistics, the default) and ``llm`` (a model behind an
OpenAI-compatible endpoint). Callers only see these values and this protocol;
whatever an engine returns is validated by the caller before it is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memd.core.signature import SeqSet, Signature
from memd.core.timeutil import time_or_none

if TYPE_CHECKING:
    from memd.engine.client import ModelClient


@dataclass(frozen=True)
class Item:
    """One entry on its way through consolidation."""

    signature: Signature
    text: str

    @property
    def seqs(self) -> SeqSet:
        return self.signature.seq

    @property
    def moment(self) -> datetime | None:
        """When the entry was written, if its signature says so readably."""
        return time_or_none(self.signature.time)


@dataclass(frozen=True)
class Block:
    """Entries that belong together, with a suggested section title."""

    title: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Supersession:
    """``new`` states a different value than ``old`` for the same subject."""

    new: SeqSet
    old: SeqSet
    reason: str


@dataclass(frozen=True)
class Rewrite:
    blocks: tuple[Block, ...]
    superseded: tuple[Supersession, ...] = ()


@dataclass(frozen=True)
class TopicInfo:
    """What routing and merging may know about a topic."""

    id: str
    summary: str
    tokens: int
    text: str  # section titles and entry texts, for similarity


@dataclass(frozen=True)
class Background:
    """What a shortlist of topics cannot tell about the rest of the vault.

    ``plan`` and ``merge_groups`` may be given only the topics that can matter
    (found through an index, see ``TopicIndex``) instead of every topic; word
    weights computed over the shortlist alone would then differ, so the
    caller passes these vault-wide counts and a lexical engine scores the
    shortlist exactly as it would score the whole vault.
    """

    topics: int  # how many topics the counts cover (for merges: the small ones)
    length: int  # their terms in all (plan: the average topic length)
    frequencies: Mapping[str, int]  # in how many of those topics each term of interest occurs
    ignore: frozenset[str]  # speakers' names, left out of every text
    ids: tuple[str, ...] = ()  # every topic id: where fits tie at zero, the order they fall in
    focus: frozenset[str] = frozenset()  # merges: only pairs with one of these topics


class TopicIndex(Protocol):
    """Every topic of the vault as word statistics, kept as derived state, so
    a shortlist can be found without reading each topic. Terms and speakers
    are those of ``engine/text.py`` over a topic's summary and text; ``below``
    limits a count to topics of fewer tokens than that."""

    def ids(self) -> list[str]:
        """Every topic id, in the vault's order."""
        ...

    def speakers(self, below: int | None = None) -> frozenset[str]:
        """Names in speaker labels anywhere in the topics."""
        ...

    def spoken_in(self, words: frozenset[str]) -> list[str]:
        """The topics where a speaker label holds every one of ``words`` (lowercased), in the vault's order."""
        ...

    def totals(self, ignore: frozenset[str], below: int | None = None) -> tuple[int, int]:
        """How many topics, and how many terms they hold (``ignore``d words left out)."""
        ...

    def frequencies(self, terms: Iterable[str], ignore: frozenset[str], below: int | None = None) -> dict[str, int]:
        """In how many topics each term occurs (terms in none are left out)."""
        ...

    def ranked(
        self, queries: list[Mapping[str, float]], average: float, ignore: frozenset[str], limit: int, slack: float
    ) -> list[list[tuple[float, str]]]:
        """For each query (term -> weight) the ``limit`` best topics by
        sum(weight * c * 2.2 / (c + 1.2 * (0.25 + 0.75 * length / average)))
        over the terms a topic holds (c: its count of the term, length: its
        terms), and any more within ``slack`` of the last of them (sums may
        differ in the last bits from a sum in another order); best first,
        topics scoring 0 left out."""
        ...

    def near(
        self, vector: Mapping[str, float], idf: Mapping[str, float], ignore: frozenset[str], below: int, floor: float
    ) -> set[str]:
        """Topics below ``below`` tokens whose cosine with ``vector`` (a unit
        tf-idf vector, tf = 1 + ln c) could reach ``floor``: those where the
        shared terms alone give at least that (a bound no topic can beat)."""
        ...

    def infos(self, ids: Iterable[str]) -> list[TopicInfo]:
        """These topics as routing sees them."""
        ...


@dataclass(frozen=True)
class Route:
    """Where a block goes: an existing topic id, or a new topic (id None).

    ``titled``: the new topic is headed by ``new_title`` alone, above its
    sections (a person's topic, ``people.py``); otherwise its first section is
    headed by it."""

    block: int
    topic: str | None
    new_title: str | None = None
    titled: bool = False


@dataclass(frozen=True)
class Scored:
    """A route with how well the chosen topic fits and how well the runner-up does."""

    route: Route
    fit: float
    runner_up: float
    candidates: tuple[str, ...] = ()  # topic ids, closest first


@dataclass(frozen=True)
class Section:
    title: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class TopicUpdate:
    """A topic's sections after new items were placed into it."""

    sections: tuple[Section, ...]
    superseded: tuple[Supersession, ...] = ()


@dataclass(frozen=True)
class Extracted:
    text: str
    speaker: str | None = None


class Engine(Protocol):
    name: str  # the registry key
    # What records (commit trailers, outcomes) say did the work, and whether a
    # model was involved (its costs go to the ledger): callers outside the
    # engine package read these instead of testing the name.
    provenance: str
    uses_model: bool

    def begin(self, run: str) -> None:
        """A new run starts (``consolidation 7``, ``ask``): label its costs."""
        ...

    def drain_notes(self) -> list[str]:
        """What went wrong since the last call (fallbacks), for the record."""
        ...

    @property
    def client(self) -> ModelClient | None:
        """The model behind the engine, if any: ``memd ask`` (memd/ask/) runs the
        model's agent loop with it, or answers extractively without one."""
        ...

    def extract(self, text: str) -> list[Extracted]:
        """Durable statements in raw input (a note, a transcript turn)."""
        ...

    def extract_batch(self, texts: list[str]) -> list[list[Extracted]]:
        """``extract`` for several inputs at once (fewer, larger model calls)."""
        ...

    def rewrite(self, items: list[Item]) -> Rewrite:
        """Group buffer items, fold duplicates, mark superseded ones."""
        ...

    def plan(self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Route]:
        """Route each block to an existing topic or a new one. ``topics`` is
        every topic, or with ``background`` a shortlist holding the ones that
        fit the blocks best."""
        ...

    def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
        """Place a block's items into a topic's sections."""
        ...

    def split(self, section: Section, parts: int, *, named: bool = True) -> list[Section]:
        """Cut one oversized section into ``parts`` coherent sections. With
        ``named=False`` the caller may cut the pieces again and names the ones
        it keeps (``title``): an engine may leave their titles empty."""
        ...

    def arrange(self, sections: list[Section], sizes: list[int], target: int) -> list[int]:
        """An order of a too-big topic's sections (indices) in which what is
        about one thing is adjacent, so cutting it into pieces of about
        ``target`` tokens (``sizes``: each section's) keeps themes whole."""
        ...

    def gather(self, items: list[Item]) -> list[Block]:
        """Of a month's notes (``items``), those that now share a subject, a block
        each, titled with it: they move to that subject's topic."""
        ...

    def refile(self, blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Route]:
        """Where notes waiting in a month's notes go now that more topics exist:
        routed as new notes are, an existing topic where one fits (the caller
        keeps only those)."""
        ...

    def merge_groups(
        self, topics: list[TopicInfo], limit_tokens: int, background: Background | None = None
    ) -> list[list[str]]:
        """Groups of small, similar topic ids to merge (first id survives).
        With ``background``, ``topics`` is a shortlist and only pairs with a
        topic in ``background.focus`` are considered."""
        ...

    def summarise(self, sections: list[Section]) -> str:
        """A one-line summary: the topic's few key facts."""
        ...

    def summarise_many(self, topics: list[list[Section]]) -> list[str]:
        """``summarise`` for several topics at once (fewer, larger model calls)."""
        ...

    def title(self, items: list[Item]) -> str:
        """A short readable title for items (used for new topics/sections)."""
        ...
