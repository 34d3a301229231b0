"""``memd eval locomo``: evidence recall of memd's retrieval on LoCoMo (ARCHITECTURE.md §6).

Each conversation goes into its own temporary vault (one entry per turn, the
session date as entry time, ``src=<dia_id>``), is consolidated when the
consolidation module is available, and every question of categories 1-4 runs
the same retrieval ``memd search`` uses. Results are taken in rank order
while fewer than ``WORD_BUDGET`` words have been taken (a large hit costs its
size); recall is the share of a question's evidence ids found in the ``src``
of the taken results.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memd.core.errors import FormatError, NotFound

WORD_BUDGET = 300
DEFAULT = "default"  # the retrieval `memd search` runs
LEXICAL = "lexical"  # words only, measured beside it so the semantic lift shows
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION = re.compile(r"^session_(\d+)$")
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    time: str | None


@dataclass(frozen=True)
class Question:
    question: str
    evidence: tuple[str, ...]
    category: int
    answer: str = ""


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Scores:
    """What one retrieval setting achieved over the questions asked."""

    recall: float
    coverage: float  # share of the gold answers' content words in the text taken
    by_category: dict[str, dict[str, float | int]]
    words: float  # mean words of result text taken per question
    latency_ms: dict[str, float]  # p50 and p95 of one retrieve call
    by_conversation: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "recall": round(self.recall, 4),
            "coverage": round(self.coverage, 4),
            "by_category": self.by_category,
            "words": round(self.words, 1),
            "latency_ms": self.latency_ms,
            "by_conversation": self.by_conversation,
        }


@dataclass(frozen=True)
class Report:
    scores: dict[str, Scores]  # by setting name; DEFAULT is what `memd search` uses
    retrieval: str  # "hybrid (<model>)" or "lexical (<why>)"
    questions: int
    entries: int
    topics: int
    seconds: float
    consolidated: bool
    conversations: list[dict[str, Any]] = field(default_factory=list)
    index_backend: str = ""  # the search backend the retrieval ran on (memd/index/backends.py)
    # Distinct topics per evidence turn over multi-hop questions (see ``concentration``);
    # None when no question had two evidence turns in topics.
    evidence_concentration: float | None = None

    @property
    def main(self) -> Scores:
        return self.scores[DEFAULT]

    @property
    def recall(self) -> float:
        return self.main.recall

    @property
    def by_category(self) -> dict[str, dict[str, float | int]]:
        return self.main.by_category

    def to_json(self) -> dict[str, Any]:
        data = self.main.to_json()
        data.update(
            {
                "retrieval": self.retrieval,
                "index_backend": self.index_backend,
                "questions": self.questions,
                "entries": self.entries,
                "topics": self.topics,
                "seconds": round(self.seconds, 2),
                "consolidated": self.consolidated,
                "evidence_concentration": _round(self.evidence_concentration),
                "word_budget": WORD_BUDGET,
                "conversations": self.conversations,
                "settings": {name: scores.to_json() for name, scores in self.scores.items() if name != DEFAULT},
            }
        )
        return data


def session_time(text: str) -> str | None:
    """``1:56 pm on 8 May, 2023`` -> ``2023-05-08T13:56:00Z`` (None when unparseable)."""
    cleaned = " ".join(text.replace(",", " ").split())
    for pattern in ("%I:%M %p on %d %B %Y", "%I:%M%p on %d %B %Y", "%d %B %Y"):
        try:
            return datetime.strptime(cleaned, pattern).strftime("%Y-%m-%dT%H:%M:00Z")
        except ValueError:
            continue
    return None


def load_locomo(path: Path) -> list[Conversation]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except (OSError, ValueError) as err:
        raise FormatError(f"{path}: not a LoCoMo JSON file ({err})") from None
    if not isinstance(data, list):
        raise FormatError(f"{path}: expected a list of conversations")
    conversations = []
    for number, item in enumerate(data, start=1):
        try:
            conversations.append(_conversation(item, number))
        except (KeyError, TypeError, AttributeError) as err:
            raise FormatError(f"{path}: conversation {number} is malformed (missing {err})") from None
    return conversations


def _conversation(item: dict[str, Any], number: int) -> Conversation:
    talk = item["conversation"]
    sessions = sorted(int(m.group(1)) for key in talk if (m := _SESSION.match(key)))
    turns: list[Turn] = []
    for n in sessions:
        when = session_time(str(talk.get(f"session_{n}_date_time", "")))
        for turn in talk[f"session_{n}"] or []:
            text = str(turn.get("text", "")).strip()
            caption = turn.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]".strip()
            turns.append(Turn(str(turn["dia_id"]), str(turn["speaker"]), text, when))
    questions = [
        Question(
            str(q["question"]),
            tuple(str(e) for e in q.get("evidence", [])),
            int(q["category"]),
            str(q.get("answer", "")),
        )
        for q in item.get("qa", [])
        if int(q.get("category", 0)) in CATEGORIES
    ]
    return Conversation(str(item.get("sample_id", number)), tuple(turns), tuple(questions))


def _ingest(root: Path, conversation: Conversation) -> Any:
    from memd.app.init import init_vault
    from memd.vault.buffer import NewEntry, append_entries

    vault = init_vault(root).vault
    items = [
        NewEntry(f"{t.speaker}: {t.text}", t.time, "import:locomo", t.dia_id) for t in conversation.turns if t.text
    ]
    for start in range(0, len(items), 500):
        append_entries(vault, items[start : start + 500])
    return vault


def _consolidate(vault: Any) -> bool:
    try:
        from memd.consolidation import run as module
    except ImportError:
        return False
    run = getattr(module, "consolidate", None)
    if run is None:
        return False
    run(vault, trigger="manual")
    return True


def taken(results: list[Any], budget: int = WORD_BUDGET) -> list[Any]:
    """Results in rank order while fewer than ``budget`` words have been taken."""
    words = 0
    out = []
    for result in results:
        if words >= budget:
            break
        words += len(result.record.text.split())
        out.append(result)
    return out


def evidence_found(results: list[Any], evidence: tuple[str, ...], budget: int = WORD_BUDGET) -> set[str]:
    """Evidence ids in the ``src`` of results taken in order within the word budget."""
    wanted = set(evidence)
    found: set[str] = set()
    for result in taken(results, budget):
        for ref in (result.record.src or "").split(";"):
            ref = ref.strip()
            if ref in wanted:
                found.add(ref)
    return found


def parse_selection(text: str, count: int) -> list[int]:
    """``"1-3"``, ``"4,5"`` or ``"2"`` -> 1-based conversation numbers, checked against ``count``."""
    chosen: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise FormatError(f"conversations: expected numbers like 1-3 or 4,5, got {text!r}")
        first, last = int(match[1]), int(match[2] or match[1])
        if not 1 <= first <= last <= count:
            raise FormatError(f"conversations: {part} is outside 1-{count}")
        chosen.update(range(first, last + 1))
    return sorted(chosen)


@dataclass
class _Tally:
    recall: dict[int, list[float]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    coverage: dict[int, list[float]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    words: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    by_conversation: dict[str, list[float]] = field(default_factory=dict)

    def scores(self) -> Scores:
        every = [s for values in self.recall.values() for s in values]
        covered = [s for values in self.coverage.values() for s in values]
        by_category = {
            f"{c}-{name}": {
                "recall": _mean(self.recall[c]),
                "coverage": _mean(self.coverage[c]),
                "questions": len(self.recall[c]),
            }
            for c, name in CATEGORIES.items()
        }
        latency = {"p50": _percentile(self.seconds, 50) * 1000, "p95": _percentile(self.seconds, 95) * 1000}
        return Scores(
            _mean(every),
            _mean(covered),
            by_category,
            sum(self.words) / len(self.words) if self.words else 0.0,
            {key: round(value, 1) for key, value in latency.items()},
            {key: _mean(values) for key, values in self.by_conversation.items()},
        )


def run_locomo(
    path: Path,
    *,
    consolidate: bool = True,
    progress: Progress | None = None,
    settings: dict[str, Any] | None = None,
    conversations: str | None = None,
    limit: int = 60,
    backend_name: str | None = None,
) -> Report:
    """Evidence recall and answer coverage of each retrieval setting (name -> ``Options``).

    ``DEFAULT`` is what ``memd search`` runs; ``LEXICAL`` (words only) is
    measured beside it in the same run unless ``settings`` says otherwise. ``backend_name``
    names the index backend (default: the configured one, ``MEMD_INDEX_BACKEND``)."""
    from memd.index import IndexStore
    from memd.index.retrieve import Options, retrieve

    chosen = load_locomo(path)
    if conversations:
        chosen = [chosen[n - 1] for n in parse_selection(conversations, len(chosen))]
    settings = settings or {DEFAULT: Options(), LEXICAL: Options(fusion="off")}
    tallies = {name: _Tally() for name in settings}
    started = time.monotonic()
    entries = topics = 0
    any_consolidated = False
    retrieval = index_backend = ""
    tokens: dict[str, int] = {}
    spread: dict[str, list[float]] = {}  # per conversation, each multi-hop question's concentration
    total_q = len(settings) * sum(len(c.questions) for c in chosen)
    done = 0
    for conversation in chosen:
        with tempfile.TemporaryDirectory(prefix="memd-locomo-") as folder:
            vault = _ingest(Path(folder) / "vault", conversation)
            if consolidate and _consolidate(vault):
                any_consolidated = True
            store = IndexStore(vault, backend_name)
            index_backend = store.backend_name
            store.sync()
            backend = store.backend()
            retrieval = _describe(store)
            tokens[conversation.sample_id] = _model_tokens(vault)
            entries += _count_entries(vault)
            spread[conversation.sample_id] = concentration(_topic_of_turn(vault), conversation.questions)
            topics += len(vault.topic_files())
            for name, options in settings.items():
                tally = tallies[name]
                for question in conversation.questions:
                    clock = time.perf_counter()
                    results = retrieve(backend, question.question, limit, options=options)
                    tally.seconds.append(time.perf_counter() - clock)
                    _score(tally, backend, results, question, conversation.sample_id)
                    done += 1
                    if progress is not None:
                        progress(done, total_q, conversation.sample_id)
            store.close()
    scores = {name: tally.scores() for name, tally in tallies.items()}
    if DEFAULT not in scores:
        raise FormatError(f"settings must include {DEFAULT!r}")
    per_conversation = [
        {
            "sample_id": c.sample_id,
            "questions": len(c.questions),
            "recall": scores[DEFAULT].by_conversation.get(c.sample_id),
            "construction_tokens": tokens[c.sample_id],
            "evidence_concentration": _round(_mean_or_none(spread[c.sample_id])),
        }
        for c in chosen
    ]
    return Report(
        scores,
        retrieval,
        len([q for c in chosen for q in c.questions]),
        entries,
        topics,
        time.monotonic() - started,
        any_consolidated,
        per_conversation,
        index_backend,
        _mean_or_none([value for values in spread.values() for value in values]),
    )


def concentration(topic_of: dict[str, str], questions: tuple[Question, ...]) -> list[float]:
    """For each multi-hop question with at least two evidence turns filed in
    topics: distinct topics holding them / those turns. 1.0 means every turn
    sits in a topic of its own; 1/n means all n share one topic. Topics are
    meant to gather what belongs together, and a multi-hop question's
    evidence is facts that belong together."""
    found = []
    for question in questions:
        if question.category != 1:
            continue
        filed = [topic_of[turn] for turn in dict.fromkeys(question.evidence) if turn in topic_of]
        if len(filed) >= 2:
            found.append(len(set(filed)) / len(filed))
    return found


def _topic_of_turn(vault: Any) -> dict[str, str]:
    """Each turn id (an entry's ``src``) -> the topic file holding it."""
    found: dict[str, str] = {}
    for path in vault.topic_files():
        for located in vault.read(path).signed():
            signature = located.entry.signature
            for ref in ((signature.src if signature else None) or "").split(";"):
                if ref.strip():
                    found[ref.strip()] = path.name
    return found


def _mean_or_none(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _score(tally: _Tally, backend: Any, results: list[Any], question: Question, sample: str) -> None:
    shown = taken(results)
    found = evidence_found(shown, question.evidence)
    recall = len(found) / len(question.evidence) if question.evidence else 1.0
    tally.recall[question.category].append(recall)
    tally.by_conversation.setdefault(sample, []).append(recall)
    tally.words.append(sum(len(result.record.text.split()) for result in shown))
    answer = set(backend.analyse(question.answer))
    if answer:
        text = set(backend.analyse(" ".join(result.record.text for result in shown)))
        tally.coverage[question.category].append(len(answer & text) / len(answer))


def _describe(store: Any) -> str:
    if store.semantic_off:
        return f"lexical ({store.semantic_off})"
    return f"hybrid ({store.vault.config.embedding})"


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _model_tokens(vault: Any) -> int:
    """Model tokens the conversation's consolidation cost (0 offline)."""
    from memd.core.ledger import summary

    return int(summary(vault.meta_dir / "ledger.jsonl")["construction"]["tokens"])


def _count_entries(vault: Any) -> int:
    count = 0
    for path in [vault.current, *vault.topic_files()]:
        if path.exists():
            count += len(vault.read(path).signed())
    return count
