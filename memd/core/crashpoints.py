"""Deterministic crash injection for the crash-safety tests.

``MEMD_CRASH_AT=N`` makes the Nth ``crashpoint()`` call of a process kill it
with SIGKILL: no cleanup runs, exactly as if the machine lost power there.
"""

from __future__ import annotations

import os
import signal

_count = 0


def crashpoint() -> None:
    global _count
    target = os.environ.get("MEMD_CRASH_AT")
    if not target:
        return
    _count += 1
    if _count == int(target):
        os.kill(os.getpid(), signal.SIGKILL)
