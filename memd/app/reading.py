"""Finding and answering: the read side of ``Memory``.

One index store is kept for the life of a ``Memory`` (the MCP server, the
daemon, an evaluation keep theirs for hours) and brought in step with the
files before each read, one reader at a time; the offline answer reads it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memd.vault.vault import Vault

if TYPE_CHECKING:
    from memd.app.results import Hits, JsonResult
    from memd.ask.answer import Answer
    from memd.engine.base import Engine
    from memd.index import IndexStore
    from memd.review.asof import PastVault

Progress = Callable[[int, int], None]

# CPU seconds an interactive search (a command, an MCP call, a warm server's reply) spends
# indexing what is missing: words first, then vectors; past it the search answers from the
# words and the vectors there are and says how to finish. A daemon builds the rest in the
# background, so a search it answers passes 0.
INTERACTIVE_EMBED_SECONDS = 3.0


class Reading:
    """Search, grep, read, list and ask over a vault, with the index store kept between them."""

    vault: Vault

    def __init__(self) -> None:
        self._store: IndexStore | None = None
        self._store_turn = threading.Lock()  # one reader at a time uses the kept store

    def recover(self, *, reading: bool = False) -> str | None:
        raise NotImplementedError

    def close(self) -> None:
        """Let go of the search index held open between searches (the next search opens it again)."""
        with self._store_turn:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- reading ----------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        since: str | None = None,
        until: str | None = None,
        source: str | None = None,
        as_of: str | None = None,
        progress: Progress | None = None,
        embedding: Progress | None = None,
        embed_seconds: float | None = None,
        words_only: bool = False,
    ) -> Hits:
        """Ranked records for ``query``; ``since``/``until`` take ISO dates or times;
        ``as_of`` (a date or a revision) searches the vault as it was then, and
        each hit cites ``path:line@commit``. ``words_only`` ranks by words alone, as
        with no embedding model (a served search asked with ``MEMD_EMBEDDING=none``).

        Vectors not yet embedded are embedded first (``embedding`` counts them),
        for at most ``embed_seconds`` of CPU time when given: past it the search
        ranks by words and the vectors there are, and ``Hits.note`` says so."""
        from memd.app.results import Hits
        from memd.ask.tools import search
        from memd.core.timeutil import time_range
        from memd.index import Filters

        _asked(query, "search for", 'memd search "oat milk"', 'query "oat milk"')

        self.recover(reading=True)
        start, end = time_range(since, until)
        filters = Filters(since=start, until=end, source=source)
        if as_of:
            from memd.review.asof import search_as_of

            past = search_as_of(self.vault, query, as_of, limit, filters)
            return Hits(query, past.hits, past.past.to_json())
        from memd.index.retrieve import Options
        from memd.index.spelling import respell

        with self._synced_store(progress, embedding, embed_seconds, words_only=words_only) as store:
            backend = store.backend()
            # Read here instead of in retrieve, once, so the hits can say which words were read again.
            spelt = respell(query, backend.analyse, backend.doc_freq)
            found = tuple(search(self.vault, spelt.query, limit, filters, store=store, options=Options(respell=False)))
            behind, rate = store.vectors_behind, store.vectors_rate
            finish = (behind[1] - behind[0]) / rate if behind and rate else None
            return Hits(
                query,
                found,
                vectors=behind,
                finish_seconds=finish,
                respelled=spelt.words,
                building=store.vectors_building,
            )

    def prepare_searches(self) -> None:
        """Ready the index this ``Memory`` keeps for many searches (a long-lived
        process: the daemon calls it when idle) rather than during its first ones."""
        with self._synced_store() as store:
            store.prepare()

    @contextmanager
    def _synced_store(
        self,
        progress: Progress | None = None,
        embedding: Progress | None = None,
        seconds: float | None = None,
        *,
        words_only: bool = False,
    ) -> Iterator[IndexStore]:
        """The index store this ``Memory`` keeps, in step with the files (hand edits
        included; cheap when nothing changed), held for one reader at a time;
        ``words_only``: its words alone, nothing embedded or loaded for vectors."""
        from memd.index import IndexStore

        with self._store_turn:
            if self._store is not None and self._store.settings_changed():
                self._store.close()
                self._store = None
            if self._store is None:
                self._store = IndexStore(self.vault)
            store = self._store
            store.words_only = words_only
            try:
                store.sync(progress, embedding=embedding, seconds=seconds)
                yield store
            finally:
                store.words_only = False

    def grep(
        self, pattern: str, *, doc: str | None = None, limit: int = 30, context: int = 3, ignore_case: bool = True
    ) -> JsonResult:
        """Lines matching a regular expression, in the whole vault or one document."""
        from memd.app.results import JsonResult
        from memd.ask.tools import grep, grep_doc
        from memd.core.patterns import check_repeats

        check_repeats(pattern)  # a{1000000} would exhaust memory in the regex compiler
        self.recover(reading=True)
        if doc is not None:
            return JsonResult(grep_doc(self.vault, doc, pattern, limit, context, ignore_case=ignore_case))
        return JsonResult(grep(self.vault, pattern, limit, context, ignore_case=ignore_case))

    def read(self, doc: str, start: int = 1, end: int | None = None) -> JsonResult:
        """Lines of one document (at most 100)."""
        from memd.app.results import JsonResult
        from memd.ask.tools import read_lines

        self.recover(reading=True)
        return JsonResult(read_lines(self.vault, doc, start, end))

    def list(self, *, offset: int = 0, limit: int = 50) -> JsonResult:
        """The catalog: CURRENT then each topic with id, tokens and summary."""
        from memd.app.results import JsonResult
        from memd.ask.tools import list_docs

        self.recover(reading=True)
        return JsonResult(list_docs(self.vault, offset, limit))

    def ask(
        self,
        question: str,
        *,
        budget: int = 1500,
        report: Callable[[Any], None] | None = None,
        embed_seconds: float | None = None,
        engine: Engine | None = None,
        words_only: bool = False,
    ) -> Answer:
        """Answer from memory with cited evidence, the way the vault's engine answers.
        ``embed_seconds`` as for ``search``: past it, evidence is found by words and the vectors there are.
        ``engine``: the vault's engine when the caller has it already; ``words_only`` as for ``search``."""
        from memd.app.replaced import with_replaced
        from memd.ask.answering import answer
        from memd.engine import get_engine

        _asked(
            question, "ask", 'memd ask "how does Dana take her coffee?"', 'question "How does Dana take her coffee?"'
        )
        self.recover(reading=True)
        engine = engine or get_engine(self.vault)
        if engine.client is not None:  # the model's agent searches with tools of its own
            return with_replaced(self.vault, answer(self.vault, question, budget=budget, report=report, engine=engine))
        with self._synced_store(seconds=embed_seconds, words_only=words_only) as store:
            found = answer(self.vault, question, budget=budget, report=report, engine=engine, store=store)
        return with_replaced(self.vault, found)

    def ask_as_of(
        self, question: str, when: str, *, budget: int = 1500, report: Callable[[Any], None] | None = None
    ) -> tuple[PastVault, Answer]:
        """``ask`` over the vault as it was at ``when`` (a date or a revision), read from git.
        Asked as of a date, the times a question names ("last May") are read as on that day;
        as of a revision, as now."""
        from memd.ask.answering import answer
        from memd.ask.offline import asked_on
        from memd.core.timeutil import time_or_none
        from memd.review.asof import past_vault

        past = past_vault(self.vault, when)
        moment = time_or_none(when)
        with asked_on(moment.date() if moment else None):
            return past, answer(past.vault, question, budget=budget, report=report)

    def reindex(self, progress: Progress | None = None, embedding: Progress | None = None) -> Any:
        """Rebuild the search index from the files alone (``embedding`` counts the records embedded)."""
        store = self.index()
        try:
            return store.rebuild(progress, embedding=embedding)
        finally:
            store.close()

    def index(self) -> IndexStore:
        from memd.index import IndexStore

        return IndexStore(self.vault)


def _asked(query: str, verb: str, command: str, argument: str) -> None:
    """A blank query is a mistake to say, not a search that finds nothing."""
    if not query.strip():
        from memd.core.errors import FormatError

        raise FormatError(f"nothing to {verb}: give a few words", hints={"cli": command, "mcp": argument})
