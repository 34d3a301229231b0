"""Engines behind one seam (see base.py). ``get_engine`` picks the one a vault uses."""

from __future__ import annotations

from ..vault import Vault
from .base import Engine


def get_engine(vault: Vault) -> Engine:
    """The llm engine when a model is configured (or MEMD_ENGINE=llm), else offline."""
    config = vault.config
    if config.engine == "llm":
        from .client import ModelClient
        from .llm import LLMEngine

        return LLMEngine(ModelClient(config.llm, vault.meta_dir / "ledger.jsonl"), vault.meta_dir)
    from .offline import OfflineEngine

    return OfflineEngine()
