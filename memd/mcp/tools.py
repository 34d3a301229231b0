"""The memory tools, one method each, over one ``memd.Memory``.

Each tool calls the same ``Memory`` verb as the matching CLI command and
returns its JSON (``to_json()``). The docstrings and field descriptions are
what the agent reads to choose a tool, so they say when to use it, with an
example. ``server.py`` registers them and turns ``MemdError`` into a tool
error the agent can act on.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, Field

from memd.app import Memory
from memd.app.reading import INTERACTIVE_EMBED_SECONDS


def _seq_text(value: Any) -> Any:
    """A seq given as a number (12, as memory_add returns it) is read as its text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# A string in the schema; a number is accepted as well (``_seq_text``).
Seq = Annotated[
    str,
    BeforeValidator(_seq_text),
    Field(description="A seq from a result or an added entry: '12', or '12+41-43' for an entry that merges several."),
]
Time = Annotated[
    str | None,
    Field(description="When it happened or was said, ISO 8601 (2026-11-20 or 2026-11-20T09:12Z). Default: now."),
]
Source = Annotated[
    str,
    Field(
        description="Who it comes from: 'user' for the user's own words, "
        "'ai' for your own conclusions, or 'import:NAME'."
    ),
]
Src = Annotated[str | None, Field(description="Optional provenance, e.g. a file path#anchor or URL.")]
Meta = Annotated[
    dict[str, str] | None,
    Field(description='Optional extra signature keys, e.g. {"confidence": "high", "project": "atlas"}.'),
]

_SEQ_KEYS = frozenset(("seq", "seqs", "supersedes"))


def seqs_as_numbers(data: Any) -> Any:
    """``data`` with every seq that is one seq as a number, whichever verb made
    it (an added entry's seq is a number, a found entry's a string): an agent
    passes back what it was given, and every tool takes either. A set such as
    ``12+41-43`` stays a string, and a list of seqs is numbers already."""
    if isinstance(data, dict):
        return {
            key: int(value)
            if key in _SEQ_KEYS and isinstance(value, str) and value.isascii() and value.isdigit()
            else seqs_as_numbers(value)
            for key, value in data.items()
        }
    if isinstance(data, list | tuple):
        return [seqs_as_numbers(item) for item in data]
    return data


class Tools:
    """The tools an agent gets; each public method is one MCP tool."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    # -- writing ------------------------------------------------------------------

    def memory_add(
        self,
        text: Annotated[
            str,
            Field(
                description="The memory: one self-contained statement, e.g. "
                "'Dana takes her coffee with oat milk.' Extra lines stay in the same entry."
            ),
        ],
        time: Time = None,
        source: Source = "ai",
        src: Src = None,
        meta: Meta = None,
    ) -> dict[str, Any]:
        """Save one memory to the user's long-term memory (appended to CURRENT.md with a new seq).

        Use it for durable facts worth recalling in a later session: preferences, facts about people,
        decisions, plans and dates. Do not store secrets or passing chit-chat. The entry is searchable at
        once; memd later files it into a topic. Returns the new entry's seq and where it was written.
        When a fact memory already holds has changed, use memory_update instead."""
        reserved = sorted(set(meta or {}) & {"seq", "time", "source", "src"})
        if reserved:
            raise ToolError(
                f"meta cannot set {', '.join(reserved)}: seq is assigned by memd; use the time, "
                "source and src arguments for the others"
            )
        replacing = sorted(set(meta or {}) & {"supersedes", "reason"})
        if replacing:
            # memory_update checks that the entry is live, is no note of the user's own and has no
            # update waiting; a mark set here would retire whatever entry the seq names.
            raise ToolError(f"meta cannot set {', '.join(replacing)}: to replace a fact, call memory_update")
        return self.memory.add(text, time=time, source=source, src=src, meta=tuple((meta or {}).items())).to_json()

    def memory_update(
        self,
        seq: Seq,
        text: Annotated[
            str,
            Field(description="The fact as it is now, one self-contained statement, e.g. 'Dana lives in Porto.'"),
        ],
        reason: Annotated[
            str,
            Field(description="Why it changed, in a few words, e.g. 'she moved in May'. Recorded with the change."),
        ],
        time: Time = None,
        source: Source = "ai",
        src: Src = None,
        meta: Meta = None,
    ) -> dict[str, Any]:
        """Replace a remembered fact that changed or was wrong: appends `text` as a new entry that
        supersedes the entry holding `seq` (its signature says `supersedes=SEQ` and the reason).

        Find the seq first (memory_search, memory_get). The new entry is searchable at once; at the next
        consolidation memd takes the old entry out and records the change in the topic's update_log, so
        memory_history shows both. Returns `added` (the new entry, as memory_add reports it), `supersedes`
        (the entry it replaces, as memory_get shows it) and `reason`. Refused when the seq is not live,
        sits in a note of the user's own, or already has an update waiting (update that one)."""
        added = self.memory.update(
            seq, text, reason=reason, time=time, source=source, src=src, meta=tuple((meta or {}).items())
        )
        return added.to_json()

    def memory_forget(self, seq: Seq) -> dict[str, Any]:
        """Remove the entry holding `seq` on purpose, exactly as `memd forget` does: it is taken out of
        CURRENT.md or its topic and the removal is committed with a `Memd-Removed` trailer, so memd never
        puts it back and `memd verify` counts it as removed by a person.

        Use it only for what should not be kept: a mistaken entry, or something the user asked you to
        forget. For a fact that changed, use memory_update (the old value stays on record). The words stay
        in the vault's git history. Returns `seqs`, `removed` (path, line and text of each entry) and `commit`."""
        return self.memory.forget(seq).to_json()

    # -- reading ------------------------------------------------------------------

    def memory_get(self, seq: Seq) -> dict[str, Any]:
        """Show the one entry holding `seq`: its `text`, its signature fields (`time`, `source`, `src`,
        `meta`), where it is (`path`, `line`, `cite` as path:line, `topic`, `headings`), and `replaced_by`
        (updates waiting in CURRENT.md that will supersede it).

        Use it before memory_update or memory_forget to be sure of the entry, or to read a cited seq in
        full. A seq that is no longer live (superseded or forgotten) is an error; memory_history tells why."""
        return self.memory.get(seq).to_json()

    def memory_search(
        self,
        query: Annotated[str, Field(description="Keywords, e.g. 'kyoto trip dates'. Plain words work best.")],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results to return.")] = 10,
        since: Annotated[str | None, Field(description="Only entries from this ISO date or time on.")] = None,
        until: Annotated[str | None, Field(description="Only entries up to this ISO date (inclusive) or time.")] = None,
        source: Annotated[str | None, Field(description="Only entries with this source: user, ai, hand...")] = None,
        as_of: Annotated[
            str | None,
            Field(
                description="Search the memory as it was then: an ISO date "
                "(through that day), a time or a git commit. Default: now."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search the user's long-term memory by keywords (BM25 ranking over entries and topic sections).

        Each result has `path`, `line`, `seq`, `time`, `source` and a `snippet`; cite results as path:line
        (with `as_of`, each has a `cite` path:line@commit). Use memory_read to see more lines around a result.
        Returns {"results": [...]}, best first, and a `note` while the vectors of a large import are
        still being built (ranked by words and the vectors built so far). A misspelt word the memory
        holds nowhere is searched as its nearest known spelling, listed in `respelled` as [typed, read]."""
        # A long first build never blocks a tool call: each call embeds a slice (the daemon, when
        # running, builds the rest; the note says how far it is).
        found = self.memory.search(
            query,
            limit=limit,
            since=since,
            until=until,
            source=source,
            as_of=as_of,
            embed_seconds=INTERACTIVE_EMBED_SECONDS,
        )
        return found.to_json()

    def memory_grep(
        self,
        pattern: Annotated[str, Field(description="A regular expression, e.g. 'oat ?milk' or 'seq=4[0-9]'.")],
        doc: Annotated[
            str | None,
            Field(
                description="Only this document: a topic id from memory_list, a path like topics/travel.md, or CURRENT."
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most matching lines to return.")] = 30,
        context: Annotated[int, Field(ge=0, le=20, description="Lines of context around each match.")] = 3,
        case_sensitive: Annotated[bool, Field(description="Match case exactly (default: ignore case).")] = False,
    ) -> dict[str, Any]:
        """Find exact words or a regular expression in the memory's Markdown files, with context lines.

        Better than memory_search for names, numbers and exact phrases. Each match has `path`, `line`, `text`
        and the lines `before` and `after`; `truncated` is true when more matches exist than `limit`."""
        return self.memory.grep(
            pattern, doc=doc, limit=limit, context=context, ignore_case=not case_sensitive
        ).to_json()

    def memory_read(
        self,
        doc: Annotated[
            str,
            Field(
                description="A topic id from memory_list (e.g. 'travel'), a path "
                "(topics/travel.md) or CURRENT for the recent-entries buffer."
            ),
        ],
        start: Annotated[int, Field(ge=1, description="First line to return (1-based).")] = 1,
        end: Annotated[
            int | None,
            Field(ge=1, description="Last line to return (inclusive); default: as far as the 100-line limit allows."),
        ] = None,
    ) -> dict[str, Any]:
        """Read lines of one memory document, at most 100 per call.

        Use it to see a citation in context (for a result at topics/travel.md:12, read doc 'topics/travel.md'
        with start 5 and end 20). `next` gives the line to continue from when the document is longer."""
        return self.memory.read(doc, start, end).to_json()

    def memory_list(
        self,
        offset: Annotated[int, Field(ge=0, description="Skip this many documents (for paging).")] = 0,
        limit: Annotated[int, Field(ge=1, le=200, description="Most documents to return.")] = 50,
    ) -> dict[str, Any]:
        """List the memory's documents: CURRENT (recent, unfiled entries) then each topic with id and summary.

        Use it to see what the memory covers, then memory_read a topic by its id. `total` counts all
        documents; page with offset."""
        return self.memory.list(offset=offset, limit=limit).to_json()

    def memory_ask(
        self,
        question: Annotated[str, Field(description="A question in plain words, e.g. 'How does Dana take her coffee?'")],
        budget: Annotated[int, Field(ge=50, le=8000, description="Most tokens of evidence to return.")] = 1500,
    ) -> dict[str, Any]:
        """Answer a question from the user's long-term memory, with the evidence and citations.

        With a language model configured, the model searches the memory with the memory tools and answers
        from what it found, citing `path:line`; the answer is checked against that evidence. Otherwise, or
        when the model cannot be used (then `fallback` says why), `answer` quotes the best-matching entries
        (including recent ones not yet filed into topics), newest first. Returns `answer`, `engine` (who
        wrote the answer), `fallback`, `found`, `support` and `evidence` blocks. Check the evidence before
        relying on the answer; newer entries supersede older."""
        return self.memory.ask(question, budget=budget).to_json()

    def memory_history(
        self,
        target: Annotated[
            str,
            BeforeValidator(_seq_text),
            Field(
                description="A seq from a result (e.g. '12' or '12+41'), or words that pick the best-matching entry."
            ),
        ],
    ) -> dict[str, Any]:
        """How one memory changed over time, from the vault's git history: when it was added, filed, merged,
        moved, edited (by memd or by hand), superseded (with the newer entry) or removed.

        Check it before relying on a fact that may have changed. Returns `steps` (each with `kind`, `date`,
        `commit`, `author`, `entry` as it read then, and `superseded_by` when replaced) and `now` (where the
        entry is today; empty when it was superseded or removed)."""
        return self.memory.history(target).to_json()

    def memory_status(self) -> dict[str, Any]:
        """Show the state of the memory: entries and tokens waiting in the CURRENT buffer against the
        consolidation thresholds, the number of topics, the next seq and the last consolidation."""
        return self.memory.status().to_json()
