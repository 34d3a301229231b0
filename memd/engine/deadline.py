"""A bound on a model call's whole time, not only on each of its reads.

The HTTP client's timeout bounds each read: an endpoint that sends a byte every
few seconds would hold a run for as long as it likes. ``within`` runs the call
on a thread of its own, waits for it until the deadline and then leaves it
behind (a daemon thread: it ends with its socket, or the process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

# A call's whole deadline is its timeout plus this: the HTTP client's own timeout,
# which names its cause better, fires first for a server that is merely silent.
DEADLINE_GRACE = 1.0
_T = TypeVar("_T")


class Overdue(Exception):
    """The call's whole deadline passed (its reads each came in time)."""


def within(seconds: float, call: Callable[[], _T]) -> _T:
    """``call()``'s result, or Overdue once ``seconds`` have passed."""
    box: list[Any] = []

    def work() -> None:
        try:
            box.append((True, call()))
        except BaseException as err:  # handed to the caller, whatever it is
            box.append((False, err))

    thread = threading.Thread(target=work, name="memd-model-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if not box:
        raise Overdue(f"no complete reply within {seconds:.0f}s")
    ok, value = box[0]
    if not ok:
        raise value
    return cast(_T, value)


def read_url(request: Any, seconds: float) -> bytes:
    """The body of a GET (at most 1 MB), each read bounded by ``seconds``."""
    import urllib.request

    with urllib.request.urlopen(request, timeout=seconds) as response:
        return bytes(response.read(1_000_000))
