"""Which lines a model was shown during an agentic ask, and whether the
evidence it names is among them: a range counts only where it meets lines a
tool call of this ask returned (search hits, grep matches with their context,
read lines), and is cut to them."""

from __future__ import annotations

from typing import Any

from memd.core.errors import MemdError
from memd.vault.vault import Vault

Shown = dict[str, set[int]]  # vault-relative path -> the line numbers tool calls returned


def seen(results: list[dict[str, Any]], shown: Shown) -> None:
    """Add the lines these tool results show (search hits, grep matches with
    their context, read lines) to ``shown``."""
    for item in results:
        result = item.get("result")
        if not isinstance(result, dict):
            continue
        for hit in result.get("results") or []:  # search
            if isinstance(hit, dict) and isinstance(hit.get("line"), int):
                end = hit.get("end_line")
                last = end if isinstance(end, int) else hit["line"]
                shown.setdefault(str(hit.get("path")), set()).update(range(hit["line"], last + 1))
        for match in result.get("matches") or []:  # grep, grep_doc
            lines = [match, *(match.get("before") or []), *(match.get("after") or [])]
            shown.setdefault(str(match.get("path")), set()).update(
                line["line"] for line in lines if isinstance(line.get("line"), int)
            )
        if isinstance(result.get("lines"), list):  # read_lines
            shown.setdefault(str(result.get("path")), set()).update(
                line["line"] for line in result["lines"] if isinstance(line.get("line"), int)
            )


def shown_ranges(vault: Vault, evidence: list[dict[str, Any]], shown: Shown) -> tuple[list[tuple[str, int, int]], str]:
    """The cited ranges cut to the lines tool calls returned, and the ranges
    (as ``doc:start-end``) that meet none of them."""
    kept: list[tuple[str, int, int]] = []
    unseen: list[str] = []
    for item in evidence:
        doc, start, end = str(item["doc"]), int(item["start"]), int(item["end"])
        try:
            rel = vault.rel(vault.resolve_doc(doc))
        except MemdError:
            rel = ""
        lines = [n for n in shown.get(rel, ()) if start <= n <= end]
        if lines:
            kept.append((rel, min(lines), max(lines)))
        else:
            unseen.append(f"{doc[:80]}:{start}-{end}")
    return kept, ", ".join(unseen[:3]) + (f" and {len(unseen) - 3} more" if len(unseen) > 3 else "")
