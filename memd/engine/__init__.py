"""Engines behind one seam (see base.py), chosen by name from ``ENGINES``.

The seam offers the judgement steps of ingest and consolidation; callers
never look at which engine runs: they call ``get_engine(vault)`` and use the
seam. ``memd ask`` lives above it (memd/ask/answering.py), and picks the
model's agent loop or the extractive answer by ``Engine.client``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memd.core.config import Config
from memd.core.errors import ConfigError
from memd.engine.base import Engine
from memd.vault.vault import Vault


def _offline(vault: Vault) -> Engine:
    from memd.engine.offline import OfflineEngine
    from memd.index.meaning import Meaning

    return OfflineEngine(Meaning(vault.config.embedding, vault.index_dir), grouping=vault.config.grouping)


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
