"""The five memory tools, as library functions with stable JSON results.

``search`` (BM25 over the index), ``grep`` (regex over the vault files),
``grep_doc``, ``list_docs`` (a paged catalog) and ``read_lines``. The CLI
prints them, ``memd ask`` gathers evidence with them, and the agent loop will
call them as tools, so each returns plain dicts and lists and raises
``memd.core.errors`` exceptions with messages a person or a model can act on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memd.core.atomic import read_text
from memd.core.errors import FormatError, NotFound
from memd.core.tokens import count_tokens
from memd.index import Filters, IndexStore
from memd.index.records import doc_id_for
from memd.index.retrieve import Options, retrieve
from memd.index.store import Progress
from memd.vault.vault import Vault

GREP_LIMIT = 30
GREP_CONTEXT = 3
LINE_CHARS = 500
READ_MAX_LINES = 100
SEARCH_LIMIT = 10
# Wall-clock budget for one grep: a catastrophic pattern like ``(a+)+$`` on a
# long line is stopped here instead of hanging the caller.
GREP_SECONDS = 2.0


class PatternError(FormatError):
    """A regular expression that is invalid or ran past the time limit."""


@dataclass(frozen=True)
class Pattern:
    compiled: Any
    text: str
    deadline: float

    def search(self, line: str) -> bool:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout()
        try:
            return self.compiled.search(line, timeout=remaining) is not None
        except TimeoutError:
            raise self._timeout() from None

    def _timeout(self) -> PatternError:
        return PatternError(
            f"pattern {self.text!r} took longer than {GREP_SECONDS:g}s (nested repeats like (a+)+ backtrack "
            "exponentially); simplify it"
        )


def compile_pattern(pattern: str, ignore_case: bool = True) -> Pattern:
    # The third-party ``regex`` engine is used for its per-call timeout; the
    # stdlib ``re`` cannot be interrupted once it starts backtracking.
    import regex

    if not pattern:
        raise PatternError("empty pattern: give a regular expression to look for")
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except (regex.error, OverflowError, RecursionError) as err:
        raise PatternError(f"invalid regular expression {pattern!r}: {err}") from None
    return Pattern(compiled, pattern, time.monotonic() + GREP_SECONDS)


def search(
    vault: Vault,
    query: str,
    limit: int = SEARCH_LIMIT,
    filters: Filters | None = None,
    *,
    store: IndexStore | None = None,
    options: Options | None = None,
    progress: Progress | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[dict[str, Any]]:
    """Ranked records for ``query``; an empty or stopword-only query finds nothing.
    ``progress(done, total)`` hears of an index (re)build on the way.
    ``since``/``until`` (ISO dates or times, inclusive; a bare ``until`` date
    means through that day) keep the entries written then or naming a day then
    (``when=``): a model asked "what did I do last May?" searches May alone."""
    if limit < 1:
        raise FormatError("limit must be at least 1")
    if since or until:
        from dataclasses import replace

        from memd.core.timeutil import time_range

        start, end = time_range(since, until)
        filters = replace(filters or Filters(), since=start, until=end)
    own = store is None
    store = store or IndexStore(vault)
    try:
        if progress is not None:
            store.sync(progress)
        results = retrieve(store.backend(), query, limit, filters, options)
    finally:
        if own:
            store.close()
    return [result.to_json() for result in results]


def _clip(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def _lines(path: Path, rel: str) -> list[str]:
    """A file's lines as the tools show them: a secret typed by hand is redacted
    (these results go to agents and models), each line where it was."""
    from memd.core.redact import redact

    return redact(read_text(path, rel), keep_lines=True).text.splitlines()


def _vault_files(vault: Vault) -> list[str]:
    from memd.index.freshness import indexed_files

    return sorted(indexed_files(vault))


def grep(
    vault: Vault,
    pattern: str,
    limit: int = GREP_LIMIT,
    context: int = GREP_CONTEXT,
    *,
    ignore_case: bool = True,
    paths: list[str] | None = None,
) -> dict[str, Any]:
    """Regex matches over the vault's Markdown files, with context lines.

    Case-insensitive unless ``ignore_case`` is False. At most ``limit``
    matches; ``truncated`` says when more exist. Lines are cut at 500
    characters. A pattern that runs too long raises ``PatternTimeout``.
    """
    if limit < 1:
        raise FormatError("limit must be at least 1")
    if context < 0:
        raise FormatError("context must be 0 or more")
    compiled = compile_pattern(pattern, ignore_case)
    matches: list[dict[str, Any]] = []
    truncated = False
    for rel in paths if paths is not None else _vault_files(vault):
        try:
            lines = _lines(vault.root / rel, rel)
        except Exception:
            continue  # unreadable files are `memd lint`'s business
        for number, line in enumerate(lines, start=1):
            if not compiled.search(line):
                continue
            if len(matches) >= limit:
                truncated = True
                break
            matches.append(_match(rel, lines, number, context))
        if truncated:
            break
    return {"pattern": pattern, "matches": matches, "truncated": truncated}


def _match(rel: str, lines: list[str], number: int, context: int) -> dict[str, Any]:
    first = max(1, number - context)
    last = min(len(lines), number + context)
    return {
        "path": rel,
        "doc": doc_id_for(rel),
        "line": number,
        "text": _clip(lines[number - 1]),
        "before": [{"line": n, "text": _clip(lines[n - 1])} for n in range(first, number)],
        "after": [{"line": n, "text": _clip(lines[n - 1])} for n in range(number + 1, last + 1)],
    }


def grep_doc(
    vault: Vault,
    doc: str,
    pattern: str,
    limit: int = GREP_LIMIT,
    context: int = GREP_CONTEXT,
    *,
    ignore_case: bool = True,
) -> dict[str, Any]:
    """``grep`` restricted to one document (id, path or CURRENT)."""
    path = vault.resolve_doc(doc)
    result = grep(vault, pattern, limit, context, ignore_case=ignore_case, paths=[vault.rel(path)])
    result["doc"] = vault.doc_id(path)
    return result


def list_docs(vault: Vault, offset: int = 0, limit: int = 50) -> dict[str, Any]:
    """The catalog: CURRENT, topics by id, then the person's own notes, each
    with summary and tokens."""
    if offset < 0 or limit < 1:
        raise FormatError("offset must be 0 or more and limit at least 1")
    files = [vault.current] if vault.current.exists() else []
    files += vault.topic_files() + vault.note_files()
    docs = [_doc_info(vault, path) for path in files[offset : offset + limit]]
    return {"total": len(files), "offset": offset, "limit": limit, "docs": docs}


def _doc_info(vault: Vault, path: Path) -> dict[str, Any]:
    from memd.core.document import parse_document  # the listing's: a search imports no parser

    rel = vault.rel(path)
    try:
        document = parse_document(read_text(path, rel))
    except Exception as err:
        return {"id": vault.doc_id(path), "path": rel, "summary": f"(unreadable: {err})", "tokens": 0, "entries": 0}
    data: dict[str, Any] = {}
    if document.frontmatter is not None:
        try:
            data = document.frontmatter.data
        except FormatError:
            data = {}
    entries = document.entries()
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        summary = "recent entries, not yet consolidated" if rel == "CURRENT.md" else (document.title() or "")
    tokens = data.get("tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        tokens = sum(count_tokens(e.entry.full_text) for e in entries)
    updated = data.get("updated")
    return {
        "id": vault.doc_id(path),
        "path": rel,
        "summary": summary,
        "tokens": tokens,
        "entries": len(entries),
        "updated": updated.isoformat() if isinstance(updated, datetime) else updated,
    }


def read_lines(vault: Vault, doc: str, start: int = 1, end: int | None = None) -> dict[str, Any]:
    """Lines ``start``..``end`` (1-based, inclusive) of a document, at most 100.

    ``end`` past the last line is cut to it; a longer range is cut to 100
    lines and ``next`` says where to continue.
    """
    path = vault.resolve_doc(doc)
    rel = vault.rel(path)
    lines = _lines(path, rel)
    total = len(lines)
    if start < 1:
        raise NotFound(f"line numbers start at 1, got {start}")
    if start > max(total, 1):
        raise NotFound(f"{rel} has {total} lines; line {start} does not exist")
    last = total if end is None else end
    if last < start:
        raise FormatError(f"end line {last} is before start line {start}")
    last = min(last, total, start + READ_MAX_LINES - 1)
    more = last < (total if end is None else min(end, total))
    return {
        "doc": vault.doc_id(path),
        "path": rel,
        "start": start,
        "end": last,
        "total_lines": total,
        "lines": [{"line": n, "text": _clip(lines[n - 1])} for n in range(start, last + 1)],
        "next": last + 1 if more else None,
    }
