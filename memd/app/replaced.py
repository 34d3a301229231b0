"""What an answer's newest value replaced.

An entry that superseded others carries ``supersedes=`` in its signature
(``Sam's city is Kyoto`` after ``... Porto`` after ``... Lisbon``). An answer
that cites it says what it replaced, from the vault's history (``memd
history``), so the person sees the value and what it used to be: "replaced
"Sam's city is Porto" (2026-11-03), which replaced "Sam's city is Lisbon"
(2026-11-01)". At most ``CHAIN`` steps back are named; history holds the rest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from memd.core.errors import MemdError
from memd.core.signature import SeqSet

if TYPE_CHECKING:
    from memd.ask.answer import Answer, Replaced
    from memd.vault.vault import Vault

CHAIN = 3  # values named, newest first


def with_replaced(vault: Vault, answer: Answer) -> Answer:
    """``answer`` with the values its supporting entries replaced (text and JSON)."""
    from memd.ask.answer import Replaced

    found: list[Replaced] = []
    for evidence in answer.support:
        previous = dict(evidence.record.extra).get("supersedes")
        records = _records(vault, evidence.record.path) if previous else {}
        by = evidence.record.seq or ""
        seen: set[str] = set()
        while previous and len(found) < CHAIN and previous not in seen:
            seen.add(previous)
            old = _last_words(vault, previous)
            if old is None:
                break
            found.append(Replaced(previous, old[0], old[1], by))
            # An entry replaced before it left the buffer never carried its own
            # ``supersedes=``: the topic's update_log recorded the step.
            by, previous = previous, old[2] or records.get(previous)
    if not found:
        return answer
    said = ", ".join(
        f'{"it" if n == 0 else "which"} replaced "{r.text}"' + (f" ({r.time[:10]})" if r.time else "")
        for n, r in enumerate(found)
    )
    text = f"{answer.answer}\n({said}; `memd history {found[0].seq}` tells more)"
    return replace(answer, answer=text, replaced=tuple(found))


def _records(vault: Vault, rel: str) -> dict[str, str]:
    """Newer seq -> the seq it superseded, from the ``update_log`` of the topic at ``rel``."""
    from memd.consolidation.verify import supersessions

    try:
        return dict(supersessions(vault.read(vault.root / rel)))
    except MemdError:
        return {}


def _last_words(vault: Vault, seq: str) -> tuple[str, str | None, str | None] | None:
    """(text, time, what it superseded in turn) of the entry ``seq`` as it last was."""
    from memd.review.life import life

    try:
        steps = life(vault, SeqSet.parse(seq)).steps
    except (MemdError, ValueError):
        return None
    for step in reversed(steps):
        entry = step.at or step.before
        if entry is not None:
            previous = entry.signature.get("supersedes")
            return entry.text, entry.signature.time, previous
    return None
