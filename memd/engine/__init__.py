"""Engines behind one seam (see base.py). ``get_engine`` picks the one a vault uses."""

from __future__ import annotations

from ..vault import Vault
from .base import Engine


def get_engine(vault: Vault) -> Engine:
    from .offline import OfflineEngine

    return OfflineEngine()
