"""Prompt templates: shipped in ``memd/templates/``, overridable per vault by a
file of the same name in ``.memd/templates/``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import NotFound

NAMES = (
    "extract",
    "rewrite",
    "plan",
    "update_topic",
    "split",
    "merge_groups",
    "summarise",
    "title",
    "agent_step",
    "answer",
)


def load(name: str, vault_meta: Path | None = None) -> str:
    if vault_meta is not None:
        override = vault_meta / "templates" / f"{name}.md"
        if override.is_file():
            return override.read_text(encoding="utf-8")
    try:
        return resources.files("memd").joinpath("templates", f"{name}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"no prompt template {name!r}") from None
