"""One document as it is on disk (``memd show``) and the vault's settings (``memd config``).

Both read the vault's files as they stand, with no index and no history, so
they are small; they live here so that the CLI asks ``Memory`` and renders
the answer, like every other command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.core.config_edit import Setting
    from memd.vault.vault import Vault


class Documents:
    """``Memory``'s verbs over one document as it is on disk and the vault's settings."""

    vault: Vault

    def show(self, doc: str = "CURRENT") -> Shown:
        """CURRENT.md or a topic document (by id or path), as it is on disk."""
        return _show(self.vault, doc)

    def settings(self, chosen: tuple[str, str] = ("default", "")) -> list[Setting]:
        """Every setting's value and source; ``chosen`` says how the vault itself was chosen."""
        return _settings(self.vault, chosen)

    def setting(self, key: str, chosen: tuple[str, str] = ("default", "")) -> Setting:
        """One setting's value and source; ``ConfigError`` for a key memd does not know."""
        return _setting(self.vault, key, chosen)

    def set_setting(self, key: str, value: str) -> SettingChanged:
        """Write ``key = value`` into ``.memd/config.toml`` (only that line changes)."""
        return _set_setting(self.vault, key, value)


@dataclass(frozen=True)
class Shown:
    """A document's text as it is on disk; ``to_json`` parses it into its title,
    frontmatter, entries and the problems found on the way."""

    id: str
    path: str
    text: str

    def to_json(self) -> dict[str, Any]:
        from memd.core.document import entry_json, parse_document
        from memd.core.yamlio import FrontmatterError, jsonable

        document = parse_document(self.text)
        frontmatter, problems = None, [f"{line}: {message}" for line, message in document.problems]
        if document.frontmatter is not None:
            try:
                frontmatter = jsonable(document.frontmatter.data)
            except FrontmatterError as err:
                problems.append(f"{1 + err.line}: {err}")
        return {
            "id": self.id,
            "path": self.path,
            "title": document.title(),
            "frontmatter": frontmatter,
            "entries": [entry_json(e) for e in document.entries()],
            "problems": problems,
        }


def _show(vault: Vault, doc: str) -> Shown:
    """CURRENT.md or a topic document, by id or path."""
    from memd.core.atomic import read_text

    path = vault.resolve_doc(doc)
    return Shown(vault.doc_id(path), vault.rel(path), read_text(path, vault.rel(path)))


def _settings(vault: Vault, chosen: tuple[str, str]) -> list[Setting]:
    """Every setting's effective value and source, the vault's own first
    (``chosen``: how it was chosen, as a source and an origin)."""
    from memd.core.config_edit import Setting, effective_settings

    found = Setting("vault", str(vault.root), chosen[0], chosen[1], help="the vault these settings belong to")
    return [found, *effective_settings(vault.config_path, shown_as=vault.rel(vault.config_path))]


def _setting(vault: Vault, key: str, chosen: tuple[str, str]) -> Setting:
    """One setting (``settings``); raises ``ConfigError`` naming the known keys for an unknown one."""
    from memd.core.errors import ConfigError
    from memd.core.settings import spec_for

    for found in _settings(vault, chosen):
        if found.key == key:
            return found
    spec_for(key)  # raises with the list of known keys
    raise ConfigError(f"{key} is a known setting that the vault's settings do not list")


@dataclass(frozen=True)
class SettingChanged:
    """One line of ``.memd/config.toml`` written: the key, its value before and
    after (secrets redacted, as TOML), where, and the variable that overrides it."""

    key: str
    before: str | None
    after: str
    where: str  # "path:line"
    overridden_by: str | None  # an environment variable set now, which wins over the file

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def _set_setting(vault: Vault, key: str, value: str) -> SettingChanged:
    """Write ``key = value`` into the vault's config file; only that line changes."""
    from memd.core.config_edit import redact
    from memd.core.config_edit import set_setting as write
    from memd.core.settings import spec_for
    from memd.core.tomledit import find_key, toml_value

    with vault.locked():
        before, written = write(vault.config_path, key, value)
    spec = spec_for(key)
    found = find_key(vault.config_path.read_text(encoding="utf-8"), spec.table, spec.name)
    where = vault.rel(vault.config_path) + (f":{found.line}" if found else "")
    before, written = redact(key, before), redact(key, written)
    was = None if before is None else toml_value(before) if isinstance(before, str | int) else str(before)
    overridden = spec.env if spec.env and os.environ.get(spec.env) else None
    return SettingChanged(key, was, toml_value(written), where, overridden)
