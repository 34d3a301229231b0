"""Prompt templates: the repository's ``templates/`` folder, shipped inside the
package as ``memd.templates``, overridable per vault by a file of the same name
in ``.memd/templates/``.

A template may show a worked example between ``<example>`` and ``</example>``;
the text of every JSON string in a template (example or format line) and every
number it shows as a JSON value are known here, so a reply that copies one
instead of reading its input can be refused. The shipped templates show
placeholders (``<seq>``, ``<its first line>``) where a value goes, never a
number that would validate; a vault's own template may still show one.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from memd.core.errors import NotFound

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
_STRING = re.compile(r'"((?:[^"\\\n]|\\.){6,})"')
_PLACEHOLDER = re.compile(r"^<[^<>]*>$|^\.\.\.$")
# A number as a JSON value: after a key, in a list, or alone in a string ("12").
_JSON_NUMBER = re.compile(r'(?:[:\[,]\s*)(-?\d+(?:\.\d+)?)(?=\s*[,}\]])|"(-?\d+)"')
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def load(name: str, vault_meta: Path | None = None) -> str:
    if vault_meta is not None:
        override = vault_meta / "templates" / f"{name}.md"
        if override.is_file():
            return override.read_text(encoding="utf-8")
    try:
        return _shipped().joinpath(f"{name}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"no prompt template {name!r}") from None


@cache
def _shipped() -> Traversable:
    # A source checkout (or an editable install of one) reads the folder
    # itself; an installed wheel holds it as the memd.templates package.
    root = Path(__file__).resolve().parents[2]  # memd/engine/prompts.py -> the checkout
    if (root / "pyproject.toml").is_file() and (root / "templates" / "extract.md").is_file():
        return root / "templates"
    return resources.files("memd.templates")


def template_strings(template: str) -> frozenset[str]:
    """Normalised texts of the JSON strings a template shows (examples, format
    lines), at least two words each: a reply containing one echoes the prompt."""
    found = set()
    for raw in _STRING.findall(template):
        text = normal(raw)
        if len(text.split()) >= 2 and not _PLACEHOLDER.match(raw.strip()):
            found.add(text)
    return frozenset(found)


def template_numbers(template: str) -> frozenset[str]:
    """The numbers a template shows as JSON values (``"start": 12``, ``["3"]``)."""
    return frozenset(a or b for a, b in _JSON_NUMBER.findall(template))


def numbers_in(text: str) -> frozenset[str]:
    """Every number written in ``text`` (a prompt's input)."""
    return frozenset(_ANY_NUMBER.findall(text))


def is_placeholder(text: str) -> bool:
    """``<a statement>`` or ``...``: a format line's slot, copied instead of filled."""
    return bool(_PLACEHOLDER.match(text.strip()))


def normal(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))
