"""Stopping long work at a safe point.

A daemon asked to stop (SIGTERM) sets the flag; long steps (consolidation
batches, ingest batches) call ``check`` between units of work, where
stopping leaves the vault exactly as it was or exactly as committed.
"""

from __future__ import annotations

import threading

from memd.core.errors import MemdError

_stop = threading.Event()


class Cancelled(MemdError):
    """The work was asked to stop; nothing was left half-done."""


def request() -> None:
    _stop.set()


def clear() -> None:
    _stop.clear()


def check() -> None:
    if _stop.is_set():
        raise Cancelled("stopped on request before finishing; nothing was left half-done")
