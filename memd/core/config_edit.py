"""The settings as `memd config` shows and changes them: each value with
where it came from (default, file, environment), secrets redacted, and a
change written into ``.memd/config.toml`` with its comments kept.

Kept apart from config.py, which every command runs (``memd add`` too), so
that only `memd config` loads it."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.config import CONFIG_TEMPLATE, load_config, parse_config
from memd.core.errors import ConfigError, FormatError
from memd.core.settings import ENGINE, SETTINGS, SettingSpec, spec_for

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


def effective_settings(path: Path, env: Mapping[str, str] | None = None, shown_as: str | None = None) -> list[Setting]:
    """Every known setting (plus unknown keys found in the file) with its source.

    The vault file must be valid (it is loaded first, so a broken file is
    reported instead of half-listed). Secrets come back redacted.
    """
    from memd.core.tomledit import find_key

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
            if spec.needs and value is None:  # a derived default: say what it follows from
                value = _DERIVED[spec.key](config)
                origin = next((f"({need} is set)" for choice, need, _ in spec.needs if choice == value), "")
        out.append(_shown(spec.key, value, source, origin, spec.help))
    key_var = config.llm.api_key_env
    key_value = env.get(key_var) or None
    out.append(
        Setting(
            API_KEY,
            REDACTED if key_value else None,
            "env" if key_value else "default",
            key_var,
            True,
            help=f"read from ${key_var}; never written to the vault",
        )
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
    from memd.core.atomic import atomic_write
    from memd.core.tomledit import set_key

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
    """The value to write into the file: checked by the setting's rule, kept
    in the form the person typed (``"90s"`` stays a string, numbers become
    numbers)."""
    try:
        spec.convert(value)
    except FormatError as err:
        raise ConfigError(str(err)) from None
    if spec.kind in ("int", "count"):
        return int(value)
    return value


# The typed value of a setting whose default is derived from others.
_DERIVED = {ENGINE.key: lambda config: config.engine}
