"""The write path after the buffer: CURRENT.md entries become topic documents.

run.py drives one consolidation (rewrite -> plan -> apply -> upkeep -> prove ->
journal -> commit); workspace.py holds the topics in memory meanwhile;
sections.py sees a topic as sections of entries; upkeep.py splits and merges
topics; verify.py is the no-loss accounting; journal.py makes the multi-file
write all-or-nothing across crashes. See ARCHITECTURE.md, "Consolidation".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.consolidation.outcome import ConsolidationError, Move, Outcome
    from memd.consolidation.recovery import recover
    from memd.consolidation.run import consolidate
    from memd.consolidation.verify import Report, verify_vault

__all__ = ["ConsolidationError", "Move", "Outcome", "Report", "consolidate", "recover", "verify_vault"]
_WHERE = {
    "Report": "verify",
    "verify_vault": "verify",
    "ConsolidationError": "outcome",
    "Move": "outcome",
    "Outcome": "outcome",
    "recover": "recovery",
}


def __getattr__(name: str) -> Any:
    # Lazy, so the append path can use journal.py without importing the whole
    # consolidation machinery (and its engines) at every `memd add`.
    if name not in __all__:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(f".{_WHERE.get(name, 'run')}", __name__), name)
