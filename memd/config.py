"""Vault settings from ``.memd/config.toml``, with environment overrides."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from .errors import ConfigError, FormatError
from .timeutil import parse_duration

CONFIG_TEMPLATE = """\
# memd settings for this vault (committed with it). Durations: 90s, 15m, 1h, 2d.

[consolidate]
buffer_tokens = 5000    # consolidate when CURRENT.md holds this many tokens
buffer_age = "1h"       # ... or when its oldest entry is this old
split_tokens = 5000     # split a topic that grows past this many tokens
merge_tokens = 1000     # merge similar topics that are smaller than this

[git]
author = "memd <memd@localhost>"   # author of memd's own commits

[vault]
lock_timeout = "10s"    # how long a writer waits for another one to finish
"""


@dataclass(frozen=True)
class Config:
    buffer_tokens: int = 5000
    buffer_age: timedelta = timedelta(hours=1)
    split_tokens: int = 5000
    merge_tokens: int = 1000
    git_author: str = "memd <memd@localhost>"
    lock_timeout: float = 10.0
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


def load_config(path: Path) -> Config:
    """Read ``path`` (missing file = defaults); ``MEMD_LOCK_TIMEOUT`` overrides."""
    raw: dict[str, Any] = {}
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise ConfigError(f"{path}: invalid TOML: {err}") from None
    consolidate = _table(raw, "consolidate", path)
    git = _table(raw, "git", path)
    vault = _table(raw, "vault", path)
    defaults = Config()
    lock_timeout = os.environ.get("MEMD_LOCK_TIMEOUT", vault.get("lock_timeout", defaults.lock_timeout))
    try:
        return Config(
            buffer_tokens=_positive_int(consolidate, "buffer_tokens", defaults.buffer_tokens, path),
            buffer_age=parse_duration(consolidate.get("buffer_age", "1h")),
            split_tokens=_positive_int(consolidate, "split_tokens", defaults.split_tokens, path),
            merge_tokens=_positive_int(consolidate, "merge_tokens", defaults.merge_tokens, path),
            git_author=str(git.get("author", defaults.git_author)),
            lock_timeout=parse_duration(lock_timeout).total_seconds(),
            raw=raw,
        )
    except FormatError as err:
        raise ConfigError(f"{path}: {err}") from None


def _table(raw: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return value


def _positive_int(table: dict[str, Any], key: str, default: int, path: Path) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{path}: {key} must be a positive integer, got {value!r}")
    return value
