"""memd: long-term memory for LLM agents and people, kept as plain Markdown.

The public Python API is ``memd.Memory`` (see memd/app/memory.py and the README).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]

if TYPE_CHECKING:
    from memd.app import Memory


def __getattr__(name: str) -> Any:
    # Lazy: `memd --version` and `memd add` should not import more than they use.
    if name == "Memory":
        from memd.app import Memory

        return Memory
    raise AttributeError(name)
