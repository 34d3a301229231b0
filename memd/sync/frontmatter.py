"""A topic's frontmatter merged by key (memd derives most of it).

``update_log`` keeps every line from both sides; ``updated`` the later time,
``created`` the earlier; the summary, token count and ``related`` links (memd
derives them) the remote's, the token count then counted again on the merged
body; ``aliases`` and ``tags`` (lists memd adds to and a person edits) merged
item by item: what either side added is kept, what either side removed goes;
any other key changed differently on both sides is a conflict for the person.
"""

from __future__ import annotations

from typing import Any

from memd.core.document import Document, Frontmatter, parse_document
from memd.core.tokens import count_tokens


def recount(front: Frontmatter, lines: list[str]) -> Frontmatter:
    """Merged frontmatter with its token count (memd derives it) counted again."""
    data = dict(front.data)
    if "tokens" not in data:
        return front
    data["tokens"] = tokens_of(parse_document("\n".join(lines) + "\n"))
    return Frontmatter.from_data(data)


class KeyConflict(Exception):
    pass


_DERIVED_NEWEST = {"updated", "last_consolidation"}
_ITEM_BY_ITEM = {"aliases", "tags"}


def merge_frontmatter(base: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """A topic's frontmatter, merged by key (see the module doc)."""
    out: dict[str, Any] = {}
    for key in [*mine, *(k for k in theirs if k not in mine)]:
        was, a, b = base.get(key), mine.get(key), theirs.get(key)
        if key == "update_log":
            out[key] = _union([*(_as_list(was)), *(_as_list(a)), *(_as_list(b))])
        elif a == b or b == was:
            value = a
        elif a == was:
            value = b
        elif key in _DERIVED_NEWEST:
            value = max(a, b, key=str)
        elif key == "created":
            value = min(a, b, key=str)
        elif key in ("summary", "tokens", "id", "related"):
            value = b
        elif key in _ITEM_BY_ITEM and all(v is None or isinstance(v, list) for v in (was, a, b)):
            value = _items_merged(_as_list(was), _as_list(a), _as_list(b))
        else:
            raise KeyConflict(f"frontmatter key {key!r} changed differently here ({a!r}) and on the remote ({b!r})")
        if key != "update_log":
            if value is None and (key not in mine or key not in theirs):
                continue
            out[key] = value
    return out


def _items_merged(was: list[Any], mine: list[Any], theirs: list[Any]) -> list[Any]:
    """Mine then theirs, without what either side removed from ``was``."""
    removed = {str(x) for x in was if x not in mine or x not in theirs}
    return [x for x in _union([*mine, *theirs]) if str(x) not in removed]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _union(items: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for item in items:
        if str(item) not in seen:
            seen.add(str(item))
            out.append(item)
    return out


def tokens_of(document: Document) -> int:
    return sum(count_tokens(located.entry.full_text) for located in document.entries())
