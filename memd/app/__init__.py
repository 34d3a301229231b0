"""memd's application layer: one object per vault that every front door uses.

The CLI, the MCP server and the daemon parse their input, call a verb of
``Memory`` and render the typed result it returns; none of them assembles the
library itself. This is also memd's public Python API (see the README).
"""

from __future__ import annotations

from memd.app.memory import Memory
from memd.app.results import Added, Hits, JsonResult, Status

__all__ = ["Added", "Hits", "JsonResult", "Memory", "Status"]
