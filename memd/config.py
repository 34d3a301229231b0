"""Vault settings from ``.memd/config.toml``, with environment overrides."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
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
# ignore = ["templates/", "*.excalidraw.md"]   # notes that are not memory (gitignore-like)

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
    ignore: tuple[str, ...] = ()  # [vault] ignore: notes that are not memory (memd/layout.py)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


def load_config(path: Path, env: Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (missing file = defaults), then apply the environment:
    ``MEMD_LOCK_TIMEOUT``, ``MEMD_ENGINE``, ``MEMD_MODEL``, ``OPENAI_BASE_URL``."""
    text = ""
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise ConfigError(f"{path}: invalid TOML: {err}") from None
    return parse_config(text, path, env)


def parse_config(text: str, path: Path, env: Mapping[str, str] | None = None) -> Config:
    """``load_config`` for a text that is not (yet) on disk; ``path`` names it in errors."""
    env = os.environ if env is None else env
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    consolidate = _table(raw, "consolidate", path)
    git = _table(raw, "git", path)
    vault = _table(raw, "vault", path)
    defaults = Config()
    lock_timeout = env.get("MEMD_LOCK_TIMEOUT", vault.get("lock_timeout", defaults.lock_timeout))
    try:
        llm = _llm(_table(raw, "llm", path), env)
        engine = env.get("MEMD_ENGINE") or _table(raw, "engine", path).get("name")
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
            ignore=_patterns(vault.get("ignore", []), path),
            raw=raw,
        )
    except (FormatError, ValueError, TypeError) as err:
        raise ConfigError(f"{path}: {err}") from None


def _llm(table: dict[str, Any], env: Mapping[str, str]) -> LLMSettings:
    model = env.get("MEMD_MODEL") or table.get("model") or None
    return LLMSettings(
        base_url=env.get("OPENAI_BASE_URL") or table.get("base_url") or None,
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


def _patterns(value: Any, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f'{path}: [vault] ignore must be a list of patterns, e.g. ["templates/", "*.draft.md"]')
    return tuple(value)


def _positive_int(table: dict[str, Any], key: str, default: int, path: Path) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{path}: {key} must be a positive integer, got {value!r}")
    return value


# -- where each setting comes from (`memd config`) ---------------------------


@dataclass(frozen=True)
class SettingSpec:
    """One setting `memd config` knows: its TOML place, type and overrides."""

    key: str  # "table.name" in .memd/config.toml
    kind: str  # "int", "duration", "str", "engine"
    default: str | int | None
    env: str | None = None
    help: str = ""

    @property
    def table(self) -> str:
        return self.key.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1]


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec("consolidate.buffer_tokens", "int", 5000, help="consolidate when CURRENT.md holds this many tokens"),
    SettingSpec("consolidate.buffer_age", "duration", "1h", help="... or when its oldest entry is this old"),
    SettingSpec("consolidate.split_tokens", "int", 5000, help="split a topic that grows past this many tokens"),
    SettingSpec("consolidate.merge_tokens", "int", 1000, help="merge similar topics smaller than this"),
    SettingSpec("git.author", "str", "memd <memd@localhost>", help="author of memd's own commits"),
    SettingSpec("vault.lock_timeout", "duration", "10s", "MEMD_LOCK_TIMEOUT", "how long a writer waits for the lock"),
    SettingSpec("vault.ignore", "list", None, help="notes that are not memory, e.g. [\"templates/\"] (edit the file)"),
    SettingSpec("engine.name", "engine", None, "MEMD_ENGINE", "offline or llm (default: llm when llm.model is set)"),
    SettingSpec("llm.base_url", "str", None, "OPENAI_BASE_URL", "OpenAI-compatible endpoint (default: OpenAI)"),
    SettingSpec("llm.model", "str", None, "MEMD_MODEL", "model name; setting it turns the llm engine on"),
    SettingSpec("llm.ask_model", "str", None, help="a different model for `memd ask` (default: llm.model)"),
    SettingSpec("llm.api_key_env", "str", "OPENAI_API_KEY", help="the environment variable that holds the API key"),
    SettingSpec("llm.timeout", "duration", "60s", help="how long to wait for one model call"),
    SettingSpec("llm.max_retries", "int", 2, help="retries of a failed or invalid model call"),
)
API_KEY = "llm.api_key"  # shown, never stored: the key lives in the variable llm.api_key_env names
_SECRET_NAME = re.compile(r"(?:^|_)(?:api_?key|key|secret|password|passwd|token)$", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"^(?P<head>[a-z][a-z0-9+.-]*://[^/:@]*:)[^/@]*(?P<tail>@.*)$", re.IGNORECASE)
REDACTED = "<redacted>"


@dataclass(frozen=True)
class Setting:
    """A setting's effective value and where it came from."""

    key: str
    value: str | int | float | bool | list[Any] | None  # already redacted when secret
    source: str  # "flag", "env", "vault", "default"
    origin: str  # the variable, "path:line", or "" for a default
    secret: bool = False
    known: bool = True
    help: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "source": self.source,
            "origin": self.origin,
            "secret": self.secret,
            "known": self.known,
        }


def spec_for(key: str) -> SettingSpec:
    for spec in SETTINGS:
        if spec.key == key:
            return spec
    names = ", ".join(spec.key for spec in SETTINGS)
    raise ConfigError(f"unknown setting {key!r}; known settings: {names}")


def effective_settings(path: Path, env: Mapping[str, str] | None = None, shown_as: str | None = None) -> list[Setting]:
    """Every known setting (plus unknown keys found in the file) with its source.

    The vault file must be valid (it is loaded first, so a broken file is
    reported instead of half-listed). Secrets come back redacted.
    """
    from .tomledit import find_key

    env = os.environ if env is None else env
    config = load_config(path, env)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    shown = shown_as or str(path)
    out: list[Setting] = []
    for spec in SETTINGS:
        table = config.raw.get(spec.table, {})
        if spec.env and env.get(spec.env):
            value: Any = env[spec.env]
            source, origin = "env", spec.env
        elif spec.name in table:
            value = table[spec.name]
            where = find_key(text, spec.table, spec.name)
            source, origin = "vault", f"{shown}:{where.line}" if where else shown
        else:
            value, source, origin = spec.default, "default", ""
            if spec.key == "engine.name":
                value = config.engine
                origin = "(llm.model is set)" if config.llm.model else ""
        out.append(_shown(spec.key, value, source, origin, spec.help))
    key_var = config.llm.api_key_env
    key_value = env.get(key_var) or None
    out.append(
        Setting(API_KEY, REDACTED if key_value else None, "env" if key_value else "default", key_var, True,
                help=f"read from ${key_var}; never written to the vault")
    )
    known = {spec.key for spec in SETTINGS}
    for key, value in _flatten(config.raw):
        if key not in known:
            table, _, name = key.rpartition(".")
            where = find_key(text, table, name) if table and "." not in table else None
            origin = f"{shown}:{where.line}" if where else shown
            out.append(_shown(key, value, "vault", origin, "not a setting memd uses", known=False))
    return out


def _shown(key: str, value: Any, source: str, origin: str, help: str, known: bool = True) -> Setting:
    secret = is_secret(key)
    return Setting(key, redact(key, value), source, origin, secret, known, help)


def is_secret(key: str) -> bool:
    return bool(_SECRET_NAME.search(key.rpartition(".")[2]))


def redact(key: str, value: Any) -> Any:
    """``value`` fit to print: secrets hidden, a password inside a URL too."""
    if is_secret(key) and value:
        return REDACTED
    if isinstance(value, str):
        return _URL_PASSWORD.sub(lambda m: f"{m['head']}{REDACTED}{m['tail']}", value)
    if not isinstance(value, str | int | float | bool | list | type(None)):
        return str(value)  # TOML dates and times
    return value


def _flatten(raw: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in raw.items():
        if isinstance(value, dict):
            out += _flatten(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def set_setting(path: Path, key: str, value: str) -> tuple[str | int | None, str | int]:
    """Write ``key = value`` into the vault config file, atomically and only if
    the result loads. Returns (the value the file had, the value written)."""
    from .atomic import atomic_write
    from .tomledit import set_key

    if key == API_KEY:
        raise ConfigError(
            "API keys are not stored in the vault (it is committed to git); export the key in the "
            "variable that llm.api_key_env names (default OPENAI_API_KEY)"
        )
    spec = spec_for(key)
    typed = _typed(spec, value)
    text = path.read_text(encoding="utf-8") if path.exists() else CONFIG_TEMPLATE
    try:
        before = tomllib.loads(text).get(spec.table, {}).get(spec.name)
    except tomllib.TOMLDecodeError:
        before = None  # a broken file may be repaired by this very change; the result is checked below
    new_text = set_key(text, spec.table, spec.name, typed)
    parsed = parse_config(new_text, path)
    if parsed.raw.get(spec.table, {}).get(spec.name) != typed:
        raise ConfigError(f"{path}: could not write {key} (is it defined in an unusual way? edit it by hand)")
    atomic_write(path, new_text)
    return before, typed


def _typed(spec: SettingSpec, value: str) -> str | int:
    if spec.kind == "list":
        raise ConfigError(f"{spec.key} is a list: edit it in .memd/config.toml, e.g. ignore = [\"templates/\"]")
    if spec.kind == "int":
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{spec.key} must be a whole number, got {value!r}") from None
        if number < 0 or (number == 0 and spec.key != "llm.max_retries"):
            raise ConfigError(f"{spec.key} must be a positive whole number, got {value!r}")
        return number
    if spec.kind == "duration":
        try:
            parse_duration(value)
        except (FormatError, ValueError) as err:
            raise ConfigError(f"{spec.key}: {err}") from None
        return value
    if spec.kind == "engine" and value not in ("offline", "llm"):
        raise ConfigError(f"{spec.key} must be offline or llm, got {value!r}")
    return value
