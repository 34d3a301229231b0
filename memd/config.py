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

# A language model makes consolidation and `memd ask` better; without one the
# offline engine does everything. Any OpenAI-compatible endpoint works.
[llm]
# base_url = "http://127.0.0.1:11434/v1"   # Ollama; env OPENAI_BASE_URL
# model = "qwen2.5:7b-instruct"            # env MEMD_MODEL; setting it turns the llm engine on
# ask_model = ""                           # a different model for `memd ask` (default: model)
api_key_env = "OPENAI_API_KEY"             # the variable holding the key (local servers need none)
timeout = "60s"
max_retries = 2
"""


@dataclass(frozen=True)
class LLMSettings:
    base_url: str | None = None
    model: str | None = None
    ask_model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 2

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None


@dataclass(frozen=True)
class Config:
    buffer_tokens: int = 5000
    buffer_age: timedelta = timedelta(hours=1)
    split_tokens: int = 5000
    merge_tokens: int = 1000
    git_author: str = "memd <memd@localhost>"
    lock_timeout: float = 10.0
    engine: str = "offline"  # "offline" or "llm"
    llm: LLMSettings = field(default_factory=LLMSettings)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


def load_config(path: Path) -> Config:
    """Read ``path`` (missing file = defaults), then apply the environment:
    ``MEMD_LOCK_TIMEOUT``, ``MEMD_ENGINE``, ``MEMD_MODEL``, ``OPENAI_BASE_URL``."""
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
        llm = _llm(_table(raw, "llm", path))
        engine = os.environ.get("MEMD_ENGINE") or _table(raw, "engine", path).get("name")
        engine = engine or ("llm" if llm.model else "offline")
        if engine not in ("offline", "llm"):
            raise ConfigError(f"{path}: engine must be offline or llm, got {engine!r}")
        if engine == "llm" and not llm.model:
            raise ConfigError("the llm engine needs a model: set [llm] model in .memd/config.toml or MEMD_MODEL")
        return Config(
            buffer_tokens=_positive_int(consolidate, "buffer_tokens", defaults.buffer_tokens, path),
            buffer_age=parse_duration(consolidate.get("buffer_age", "1h")),
            split_tokens=_positive_int(consolidate, "split_tokens", defaults.split_tokens, path),
            merge_tokens=_positive_int(consolidate, "merge_tokens", defaults.merge_tokens, path),
            git_author=str(git.get("author", defaults.git_author)),
            lock_timeout=parse_duration(lock_timeout).total_seconds(),
            engine=engine,
            llm=llm,
            raw=raw,
        )
    except (FormatError, ValueError, TypeError) as err:
        raise ConfigError(f"{path}: {err}") from None


def _llm(table: dict[str, Any]) -> LLMSettings:
    model = os.environ.get("MEMD_MODEL") or table.get("model") or None
    return LLMSettings(
        base_url=os.environ.get("OPENAI_BASE_URL") or table.get("base_url") or None,
        model=model,
        ask_model=table.get("ask_model") or None,
        api_key_env=str(table.get("api_key_env", "OPENAI_API_KEY")),
        timeout=parse_duration(table.get("timeout", "60s")).total_seconds(),
        max_retries=int(table.get("max_retries", 2)),
    )


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
