"""memd's application layer: one object per vault that every front door uses.

The CLI, the MCP server and the daemon parse their input, call a verb of
``Memory`` and render the typed result it returns; none of them assembles the
library itself. This is also memd's public Python API (see the README).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memd.app.memory import Memory

if TYPE_CHECKING:
    from memd.app.results import Added, Hits, JsonResult, Status
    from memd.ingest import Rejected

__all__ = ["Added", "Hits", "JsonResult", "Memory", "Rejected", "Status"]


def __getattr__(name: str) -> Any:
    # The result types are imported when asked for: `memd add` needs only its own.
    if name == "Rejected":  # what `Memory.ingest` raises for a file it cannot take
        from memd.ingest import Rejected

        return Rejected
    if name not in __all__:
        raise AttributeError(name)
    from memd.app import results

    return getattr(results, name)
