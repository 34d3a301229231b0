"""``memd eval locomo``: evidence recall of memd's retrieval on LoCoMo (ARCHITECTURE.md §6).

Each conversation goes into its own temporary vault (one entry per turn, the
session date as entry time, ``src=<dia_id>``), is consolidated when the
consolidation module is available, and every question of categories 1-4 runs
the same retrieval ``memd search`` uses. Results are taken in rank order
while fewer than ``WORD_BUDGET`` words have been taken (a large hit costs its
size); recall is the share of a question's evidence ids found in the ``src``
of the taken results.

Abstention: every question, of categories 1-4 and the unanswerable category 5
(adversarial: asked about the wrong person, or about what was never said), is
also put to the offline ``memd ask``; reported are the shares of each kind it
answers "nothing in memory answers this" to.

Answers: the same offline answers, per category, as the share that contain
the expected answer (both normalised: case, punctuation, articles, number
words as digits, dates in common formats as ISO dates: ``answer_marks.py``), the share holding at
least half of the expected answer's content words, and the share refused.
A refused answer holds nothing (its "closest" memory is no answer); category
5 has no expected answer, only its refusal rate counts.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memd.app.answer_marks import answer_marks
from memd.app.eval_report import DEFAULT, LEXICAL, WORD_BUDGET, Abstention, Answers, Report, Scores, mean, rounded
from memd.core.errors import FormatError
from memd.ingest.locomo import CATEGORIES, UNANSWERABLE, Conversation, Question, load_locomo

Progress = Callable[[int, int, str], None]


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
                "recall": mean(self.recall[c]),
                "coverage": mean(self.coverage[c]),
                "questions": len(self.recall[c]),
            }
            for c, name in CATEGORIES.items()
        }
        latency = {"p50": _percentile(self.seconds, 50) * 1000, "p95": _percentile(self.seconds, 95) * 1000}
        return Scores(
            mean(every),
            mean(covered),
            by_category,
            sum(self.words) / len(self.words) if self.words else 0.0,
            {key: round(value, 1) for key, value in latency.items()},
            {key: mean(values) for key, values in self.by_conversation.items()},
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
    abstention: bool = True,
) -> Report:
    """Evidence recall and answer coverage of each retrieval setting (name -> ``Options``).

    ``DEFAULT`` is what ``memd search`` runs; ``LEXICAL`` (words only) is
    measured beside it in the same run unless ``settings`` says otherwise. ``backend_name``
    names the index backend (default: the configured one, ``MEMD_INDEX_BACKEND``);
    ``abstention`` also puts every question, answerable or not, to the offline ``memd ask``."""
    from memd.app.concentration import concentration, topic_of_turn
    from memd.ask.offline import ask as offline_ask
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
    if abstention:
        total_q += sum(len(c.questions) + len(c.unanswerable) for c in chosen)
    abstained: dict[bool, list[bool]] = {True: [], False: []}  # answerable? -> abstained per question
    answered = {category: Answers() for category in (*CATEGORIES, UNANSWERABLE)}
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
            spread[conversation.sample_id] = concentration(topic_of_turn(vault), conversation.questions)
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
            if abstention:
                for question in (*conversation.questions, *conversation.unanswerable):
                    said = offline_ask(vault, question.question, store=store)
                    abstained[question.category != UNANSWERABLE].append(not said.found)
                    tally_answer = answered[question.category]
                    tally_answer.refused.append(float(not said.found))
                    if question.category != UNANSWERABLE and question.answer.strip():
                        contains, half = answer_marks(
                            said.answer if said.found else "", question.answer, backend.analyse
                        )
                        tally_answer.contains.append(float(contains))
                        tally_answer.half.append(float(half))
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
            "evidence_concentration": rounded(_mean_or_none(spread[c.sample_id])),
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
        Abstention(
            mean([float(a) for a in abstained[False]]),
            mean([float(a) for a in abstained[True]]),
            len(abstained[False]),
            len(abstained[True]),
        )
        if abstention
        else None,
        _mean_or_none([value for values in spread.values() for value in values]),
        {
            f"{category}-{CATEGORIES.get(category, 'unanswerable')}": tally.to_json()
            for category, tally in answered.items()
        }
        if abstention
        else None,
    )


def _mean_or_none(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


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
