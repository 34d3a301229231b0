"""Garbage collection in a long process: one that keeps serving (the daemon, the
MCP server), and one consolidation filing a long buffer in parts (``settling``).

Python's full collection walks every container object that has lived long;
a long-lived reader keeps hundreds of thousands of them (decoded records,
the analysed words of texts it met, parsed manifests, the vector store's row
map), and a search leaves no garbage in cycles, so each full collection is a
pause that frees nothing: at 100,000 records one came every 80 or so searches
of the MCP server and took a median 176 ms of CPU, more as the caches grew
(``bench/bench_rss.py``; README, "Find things", on long-lived processes).
The daemon settles whenever its loop idles (at most once a second), so an idle
daemon resets about every quarter of an hour.

So a front door that keeps serving calls ``Heap.settle`` between requests:
it collects what is new (only objects not frozen are walked, so this costs
what the last request left), then freezes every object alive, which later
collections skip. An object frozen while alive that dies later inside a
cycle is not collected until the next reset: every ``reset_every`` settles
the frozen objects are released and collected once with the rest.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

RESET_EVERY = 1000  # settles between two full collections


class Heap:
    """The collection policy of one serving process (one instance per process)."""

    def __init__(self, reset_every: int = RESET_EVERY) -> None:
        self.reset_every = max(1, reset_every)
        self.settled = 0

    def settle(self) -> None:
        """Collect what is new since the last settle, then exempt what is alive now."""
        self.settled += 1
        if self.settled % self.reset_every == 0:
            gc.unfreeze()  # this once, the full walk: cycles that died while frozen are found
        gc.collect()
        gc.freeze()


@contextlib.contextmanager
def settling() -> Iterator[Callable[[], None]]:
    """A settle to call between the parts of a long piece of work: what the last
    part left is collected, and what is alive then (the language pipeline, the
    model, the caches) is frozen, so each full collection of a later part walks
    only what that part made; without it they walk everything, more with every
    part. What was frozen is released when the work ends. A process that freezes
    objects already (``Heap``) keeps its own policy: the settle does nothing there."""
    froze = False
    theirs = gc.get_freeze_count() > 0

    def settle() -> None:
        nonlocal froze
        if theirs:
            return
        gc.collect()
        gc.freeze()
        froze = True

    try:
        yield settle
    finally:
        if froze:
            gc.unfreeze()
