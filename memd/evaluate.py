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

from .errors import FormatError, NotFound

WORD_BUDGET = 300
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


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Report:
    recall: float
    by_category: dict[str, dict[str, float | int]]
    questions: int
    entries: int
    topics: int
    seconds: float
    consolidated: bool
    conversations: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "recall": round(self.recall, 4),
            "by_category": self.by_category,
            "questions": self.questions,
            "entries": self.entries,
            "topics": self.topics,
            "seconds": round(self.seconds, 2),
            "consolidated": self.consolidated,
            "word_budget": WORD_BUDGET,
            "conversations": self.conversations,
        }


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
        Question(str(q["question"]), tuple(str(e) for e in q.get("evidence", [])), int(q["category"]))
        for q in item.get("qa", [])
        if int(q.get("category", 0)) in CATEGORIES
    ]
    return Conversation(str(item.get("sample_id", number)), tuple(turns), tuple(questions))


def _ingest(root: Path, conversation: Conversation) -> Any:
    from .buffer import NewEntry, append_entries
    from .setup import init_vault

    vault = init_vault(root).vault
    items = [
        NewEntry(f"{t.speaker}: {t.text}", t.time, "import:locomo", t.dia_id) for t in conversation.turns if t.text
    ]
    for start in range(0, len(items), 500):
        append_entries(vault, items[start : start + 500])
    return vault


def _consolidate(vault: Any) -> bool:
    try:
        from .consolidation import run as module
    except ImportError:
        return False
    run = getattr(module, "consolidate", None)
    if run is None:
        return False
    run(vault, trigger="manual")
    return True


def evidence_found(results: list[Any], evidence: tuple[str, ...], budget: int = WORD_BUDGET) -> set[str]:
    """Evidence ids in the ``src`` of results taken in order within the word budget."""
    words = 0
    found: set[str] = set()
    wanted = set(evidence)
    for result in results:
        if words >= budget:
            break
        record = result.record
        words += len(record.text.split())
        for ref in (record.src or "").split(";"):
            ref = ref.strip()
            if ref in wanted:
                found.add(ref)
    return found


def run_locomo(path: Path, *, consolidate: bool = True, progress: Progress | None = None,
               options: Any = None, limit: int = 60) -> Report:
    from .index import IndexStore
    from .index.retrieve import retrieve

    conversations = load_locomo(path)
    started = time.monotonic()
    per_cat: dict[int, list[float]] = {c: [] for c in CATEGORIES}
    entries = topics = 0
    any_consolidated = False
    details: list[dict[str, Any]] = []
    total_q = sum(len(c.questions) for c in conversations)
    done = 0
    for conversation in conversations:
        with tempfile.TemporaryDirectory(prefix="memd-locomo-") as folder:
            vault = _ingest(Path(folder) / "vault", conversation)
            if consolidate and _consolidate(vault):
                any_consolidated = True
            store = IndexStore(vault)
            store.sync()
            entries += _count_entries(vault)
            topics += len(vault.topic_files())
            scores: list[float] = []
            for question in conversation.questions:
                results = retrieve(store.backend(), question.question, limit, options=options)
                found = evidence_found(results, question.evidence)
                score = len(found) / len(question.evidence) if question.evidence else 1.0
                per_cat[question.category].append(score)
                scores.append(score)
                done += 1
                if progress is not None:
                    progress(done, total_q, conversation.sample_id)
            store.close()
            details.append({"sample_id": conversation.sample_id, "questions": len(scores),
                            "recall": round(sum(scores) / len(scores), 4) if scores else None,
                            "construction_tokens": _model_tokens(vault)})
    every = [s for scores in per_cat.values() for s in scores]
    by_category = {
        f"{c}-{name}": {"recall": round(sum(per_cat[c]) / len(per_cat[c]), 4) if per_cat[c] else 0.0,
                        "questions": len(per_cat[c])}
        for c, name in CATEGORIES.items()
    }
    return Report(sum(every) / len(every) if every else 0.0, by_category, len(every), entries, topics,
                  time.monotonic() - started, any_consolidated, details)


def _model_tokens(vault: Any) -> int:
    """Model tokens the conversation's consolidation cost (0 offline)."""
    from .ledger import summary

    return int(summary(vault.meta_dir / "ledger.jsonl")["construction"]["tokens"])


def _count_entries(vault: Any) -> int:
    count = 0
    for path in [vault.current, *vault.topic_files()]:
        if path.exists():
            count += len(vault.read(path).signed())
    return count
