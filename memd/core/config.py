"""Vault settings from ``.memd/config.toml``, with environment overrides.

Every setting is declared once, in settings.py; this module turns the file
and the environment into the typed ``Config`` (where each value came from, as
`memd config` shows it: config_edit.py)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from memd.core.errors import ConfigError, FormatError
from memd.core.settings import ENGINE, SETTINGS, default_config_text, resolve

CONFIG_TEMPLATE = default_config_text()
_DEFAULTS = resolve({}, {})


def _default(key: str) -> Any:
    return _DEFAULTS[key]


@dataclass(frozen=True)
class LLMSettings:
    """The ``[llm]`` table: the model endpoint and how long and how often to try it."""

    base_url: str | None = _default("llm.base_url")
    model: str | None = _default("llm.model")
    ask_model: str | None = _default("llm.ask_model")
    api_key_env: str = _default("llm.api_key_env")
    timeout: float = _default("llm.timeout")
    max_retries: int = _default("llm.max_retries")
    context_tokens: int | None = _default("llm.context_tokens")  # None: what the server reports, else 4096
    budget_time: float = _default("llm.budget_time")
    budget_tokens: int = _default("llm.budget_tokens")
    breaker_failures: int = _default("llm.breaker_failures")
    breaker_cooldown: float = _default("llm.breaker_cooldown")
    gating: str = _default("llm.gating")

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None


@dataclass(frozen=True)
class Config:
    """The typed settings of a vault (built from the registry in settings.py)."""

    buffer_tokens: int = _default("consolidate.buffer_tokens")
    buffer_age: timedelta = _default("consolidate.buffer_age")  # noqa: RUF009 - an immutable value
    split_tokens: int = _default("consolidate.split_tokens")
    merge_tokens: int = _default("consolidate.merge_tokens")
    grouping: str = _default("consolidate.grouping")
    git_author: str = _default("git.author")
    git_repository: str = _default("git.repository")  # "own": never commit into an enclosing repository
    lock_timeout: float = _default("vault.lock_timeout")
    engine: str = _default(ENGINE.key)
    embedding: str = _default("index.embedding")  # sentence-embedding model of the search index, or "none"
    index_backend: str = _default("index.backend")  # the search engine behind memd/index/base.py
    llm: LLMSettings = field(default_factory=LLMSettings)
    sync_remote: str | None = _default("sync.remote")  # the daemon syncs only when this is set
    sync_interval: timedelta = _default("sync.interval")  # noqa: RUF009 - an immutable value
    ignore: tuple[str, ...] = ()  # [vault] ignore: notes that are not memory (memd/core/layout.py)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


def load_config(path: Path, env: Mapping[str, str] | None = None, *, cache: Path | None = None) -> Config:
    """Read ``path`` (missing file = defaults), then apply the environment
    variables the settings name (``MEMD_LOCK_TIMEOUT``, ``MEMD_ENGINE``,
    ``MEMD_MODEL``, ``OPENAI_BASE_URL``, ...). ``cache``: a derived file that
    keeps the parsed TOML beside the text it came from (``_parsed``)."""
    from memd.core.atomic import read_bytes

    text = ""
    try:
        # A link is followed (a config kept with one's dotfiles), a pipe or a device never waited on.
        text = read_bytes(path, follow_links=True).decode("utf-8")
    except FileNotFoundError:
        pass
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    except OSError as err:
        why = "not a regular file (a pipe or a device?)" if err.errno == errno.EINVAL else err.strerror
        raise ConfigError(f"{path}: cannot read: {why}") from None
    return parse_config(text, path, env, cache=cache)


def parse_config(text: str, path: Path, env: Mapping[str, str] | None = None, *, cache: Path | None = None) -> Config:
    """``load_config`` for a text that is not (yet) on disk; ``path`` names it in errors."""
    env = os.environ if env is None else env
    raw = _parsed(text, path, cache)
    for table in {spec.table for spec in SETTINGS}:
        if not isinstance(raw.get(table, {}), dict):
            raise ConfigError(f"{path}: [{table}] must be a table")
    try:
        values = resolve(raw, env)
    except FormatError as err:
        raise ConfigError(f"{path}: {err}") from None
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for spec in SETTINGS:
        value = values[spec.key]
        owner, _, attr = spec.attr.rpartition(".")
        (nested.setdefault(owner, {}) if owner else top)[attr] = value
    return Config(**top, llm=LLMSettings(**nested.get("llm", {})), raw=raw)


def _parsed(text: str, path: Path, cache: Path | None) -> dict[str, Any]:
    """The TOML of ``text``. Every command reads the settings, and the TOML
    parser costs more to import than most commands' own work (4 ms of a 40 ms
    ``memd add``): with ``cache``, the parsed tables are kept there as JSON with
    the very text they came from, and used again only for that text."""
    from memd.core.atomic import read_bytes

    if not text:
        return {}
    if cache is not None:
        try:
            kept = json.loads(read_bytes(cache))
            if isinstance(kept, dict) and kept.get("text") == text and isinstance(kept.get("raw"), dict):
                return kept["raw"]
        except (OSError, ValueError):
            pass
    import tomllib

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    if cache is not None:
        _keep(cache, text, raw)
    return raw


def _keep(cache: Path, text: str, raw: dict[str, Any]) -> None:
    """Keep ``raw`` for ``_parsed``, if JSON says it back exactly (TOML dates, say, it does not)."""
    from memd.core.atomic import atomic_write
    from memd.core.errors import WriteError

    try:
        data = json.dumps({"text": text, "raw": raw}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return
    # Only inside a vault's own folder, never through a link.
    if json.loads(data)["raw"] != raw or not cache.parent.parent.is_dir() or cache.parent.is_symlink():
        return
    with contextlib.suppress(WriteError):  # a read-only vault: parsed again next time
        atomic_write(cache, data, derived=True)
