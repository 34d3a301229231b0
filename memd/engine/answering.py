"""How a vault answers a question, and how its engine is described.

The choice between the model-driven ask (the agent loop) and the extractive
offline ask belongs to the engine seam, so front doors call ``answer`` and
never look at which engine runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memd.core.config import Config
from memd.vault.vault import Vault

if TYPE_CHECKING:
    from memd.ask.offline import Answer


def answer(vault: Vault, question: str, *, budget: int, report: Callable[[Any], None] | None = None) -> Answer:
    """Answer ``question`` from the vault with the engine the vault is set up for
    (a model runs the agent loop; offline, the extractive answer)."""
    from memd.engine import get_engine

    return get_engine(vault).ask(vault, question, budget=budget, report=report)


def describe(config: Config) -> dict[str, Any]:
    """Which engine runs, and whether memory content leaves this machine."""
    if config.engine != "llm":
        return {"name": "offline", "local": True, "summary": "offline (no model; nothing leaves this machine)"}
    from urllib.parse import urlparse

    from memd.engine.client import is_local

    host = urlparse(config.llm.base_url or "https://api.openai.com/v1").hostname or "?"
    local = is_local(config.llm.base_url)
    where = "local: nothing leaves this machine" if local else f"content is sent to {host}"
    return {
        "name": "llm",
        "model": config.llm.model,
        "base_url": config.llm.base_url,
        "local": local,
        "summary": f"llm ({config.llm.model} at {host}, {where})",
    }
