"""Recurrence gating: what the offline rules cannot settle on their own.

Most of what a conversation adds is routine: a new remark on a subject memory
already files in one clear place, with nothing it repeats or contradicts. The
model is asked only about the rest:

- a near-repeat of a *different* fact (content words overlap a lot, but the
  words are not the same): an update, or two facts? only meaning tells;
- a contradiction candidate (the same "X is ..." subject with another value);
- a block whose routing is a close call between two topics, or that fits no
  topic although topics exist (a new subject, or one the words miss).

Everything else goes the offline way, and the model never sees it.
"""

from __future__ import annotations

from collections.abc import Sequence

from memd.engine.base import Item, Scored
from memd.engine.coverage import ROUTE_THRESHOLD
from memd.engine.rules import statement
from memd.engine.text import terms

NEAR_LOW = 0.4  # Jaccard of term sets from here up: a near-repeat (the same words exactly fold offline)
AMBIGUOUS = 0.75  # a runner-up fitting at least this share of the best: a close call
MIN_TERMS = 4  # shorter texts share words by chance


def key(item: Item) -> str:
    return str(item.seqs)


def tense(items: Sequence[Item], context: Sequence[Item] = ()) -> set[str]:
    """Keys of ``items`` that nearly repeat, or may contradict, another item
    (among themselves or in ``context``)."""
    every = [*items, *context]
    words = [frozenset(terms(item.text)) for item in every]
    subjects = [statement(item.text) for item in every]
    found: set[str] = set()
    for i in range(len(items)):
        for j in range(i + 1, len(every)):
            if _near(words[i], words[j]) or _contradicts(subjects[i], subjects[j]):
                found.add(key(every[i]))
                if j < len(items):
                    found.add(key(every[j]))
    return found


def _near(a: frozenset[str], b: frozenset[str]) -> bool:
    if len(a) < MIN_TERMS or len(b) < MIN_TERMS:
        return False
    share = len(a & b) / len(a | b)
    return NEAR_LOW <= share < 1.0


def _contradicts(a: tuple[str, str] | None, b: tuple[str, str] | None) -> bool:
    return a is not None and b is not None and a[0] == b[0] and a[1] != b[1]


def unsettled_route(scored: Scored, topics: int) -> bool:
    """A close call between two topics, or no fitting topic although some exist."""
    if not topics:
        return False  # nothing to choose from: a new topic is certain
    if scored.fit < ROUTE_THRESHOLD:
        return True
    return scored.runner_up >= AMBIGUOUS * scored.fit
