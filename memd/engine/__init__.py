"""Engines behind one seam (see base.py), chosen by name from ``ENGINES``.

Front doors never look at which engine runs: they call ``get_engine(vault)``
and use the seam, e.g. ``get_engine(vault).ask(vault, question, budget=...)``
for ``memd ask`` (the model's agentic answer, or the extractive one, with
``Answer.fallback`` saying when a configured model was not used).
"""

from __future__ import annotations

from collections.abc import Callable

from memd.core.errors import ConfigError
from memd.engine.base import Engine
from memd.vault.vault import Vault


def _offline(vault: Vault) -> Engine:
    from memd.engine.offline import OfflineEngine
    from memd.index.meaning import Meaning

    if vault.config.grouping != "meaning":
        return OfflineEngine()
    return OfflineEngine(Meaning(vault.config.embedding, vault.index_dir))


def _llm(vault: Vault) -> Engine:
    from memd.engine.breaker import health_path
    from memd.engine.client import ModelClient
    from memd.engine.llm import LLMEngine

    client = ModelClient(vault.config.llm, vault.meta_dir / "ledger.jsonl", health_path(vault.meta_dir))
    return LLMEngine(client, vault.meta_dir)


ENGINES: dict[str, Callable[[Vault], Engine]] = {"offline": _offline, "llm": _llm}


def get_engine(vault: Vault, name: str | None = None) -> Engine:
    """The engine the vault's configuration names (or ``name``)."""
    chosen = name or vault.config.engine
    factory = ENGINES.get(chosen)
    if factory is None:
        raise ConfigError(f"unknown engine {chosen!r}; engines: {', '.join(ENGINES)}")
    return factory(vault)
