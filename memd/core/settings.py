"""The one list of memd's settings: the default config.toml, the typed config
and `memd config` are all generated from it.

Each setting names its TOML table and key, its kind (how a value is checked
and converted), its default, the environment variable that overrides it, the
attribute of the typed config it fills, and how the default ``config.toml``
shows it (a line, a commented-out example, or not at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memd.core.errors import FormatError
from memd.core.timeutil import parse_duration


@dataclass(frozen=True)
class SettingSpec:
    """One setting: where it lives in ``.memd/config.toml`` and what it holds."""

    table: str
    name: str
    kind: str  # "int" (positive), "count" (0 or more), "duration" (seconds), "interval" (a timedelta), "str",
    # "url" (http or https, with a host), "choice", "patterns" (a list of strings)
    default: str | int | None
    help: str = ""
    env: str | None = None
    attr: str = ""  # the typed config's attribute: "buffer_tokens", or "llm.timeout" for a nested one
    shown: str = "line"  # in the default config.toml: "line", "example" (commented out) or "hidden"
    example: str | int | None = None  # the value a commented-out example shows
    choices: tuple[str, ...] = ()
    # (choice, a setting that must be set for it, the message when it is not):
    # a model-backed engine needs a model
    needs: tuple[tuple[str, str, str], ...] = ()
    above_zero: bool = False  # a duration of 0 would make it useless (a model call that always times out)

    @property
    def key(self) -> str:
        return f"{self.table}.{self.name}"

    def convert(self, value: Any, *, from_env: bool = False) -> Any:
        """The typed value of a raw one (from TOML, the environment or a CLI argument).
        Raises FormatError naming the setting when it does not fit; a value from the
        environment is named by its variable."""
        try:
            return self._convert(value, from_env)
        except FormatError as err:
            if from_env:
                raise FormatError(f"{self.env} (in the environment): {err}") from None
            raise

    def _convert(self, value: Any, from_env: bool) -> Any:
        if self.kind == "patterns":  # a list of patterns (one string is one pattern)
            value = [] if value is None else [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise FormatError(f'{self.key} must be a list of patterns, e.g. ["templates/", "*.draft.md"]')
            return tuple(value)
        if value is None:
            return None
        if self.kind in ("int", "count"):
            if isinstance(value, str):
                try:
                    value = int(value.strip())
                except ValueError:
                    raise FormatError(f"{self.key} must be a whole number, got {value!r}") from None
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if self.kind == "int" else 0):
                what = "a positive integer" if self.kind == "int" else "a whole number, 0 or more"
                raise FormatError(f"{self.key} must be {what}, got {value!r}")
            return value
        if self.kind in ("duration", "interval"):
            try:
                delta = parse_duration(value)
            except (FormatError, ValueError, TypeError) as err:
                raise FormatError(f"{self.key}: {err}") from None
            if self.above_zero and delta.total_seconds() <= 0:
                raise FormatError(f"{self.key} must be longer than 0, got {value!r}")
            return delta if self.kind == "interval" else delta.total_seconds()
        if self.kind == "choice":
            if value not in self.choices:
                raise FormatError(f"{self.key} must be {' or '.join(self.choices)}, got {value!r}")
            return str(value)
        if not isinstance(value, str):
            raise FormatError(f"{self.key} must be a string, got {value!r}")
        if self.kind == "url" and value.strip() and not from_env:
            # (A variable other tools share, such as OPENAI_BASE_URL, is theirs to check: it
            # matters to memd only once a model is called, which then says what went wrong.)
            from urllib.parse import urlsplit

            try:
                parts = urlsplit(value.strip())
                ok = parts.scheme in ("http", "https") and bool(parts.hostname)
            except ValueError:
                ok = False
            if not ok:
                raise FormatError(
                    f"{self.key} must be an http:// or https:// address, e.g. {self.example}; got {value!r}"
                )
            return value.strip()
        return value or None


# Which engine runs; its default follows from whether a model is configured.
ENGINE = SettingSpec(
    "engine",
    "name",
    "choice",
    None,
    "offline or llm (default: llm when llm.model is set)",
    env="MEMD_ENGINE",
    attr="engine",
    shown="hidden",
    choices=("offline", "llm"),
    needs=(("llm", "llm.model", "the llm engine needs a model: set [llm] model in .memd/config.toml or MEMD_MODEL"),),
)
SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "consolidate",
        "buffer_tokens",
        "int",
        5000,
        "consolidate when CURRENT.md holds this many tokens",
        attr="buffer_tokens",
    ),
    SettingSpec(
        "consolidate", "buffer_age", "interval", "1h", "... or when its oldest entry is this old", attr="buffer_age"
    ),
    SettingSpec(
        "consolidate",
        "split_tokens",
        "int",
        5000,
        "split a topic that grows past this many tokens",
        attr="split_tokens",
    ),
    SettingSpec(
        "consolidate",
        "merge_tokens",
        "int",
        1000,
        "merge similar topics that are smaller than this",
        attr="merge_tokens",
    ),
    SettingSpec(
        "consolidate",
        "grouping",
        "choice",
        "words",
        "how the offline engine groups entries into topics: words, or meaning (subject and sentence vectors)",
        env="MEMD_GROUPING",
        attr="grouping",
        shown="hidden",
        choices=("words", "meaning"),
    ),
    SettingSpec("git", "author", "str", "memd <memd@localhost>", "author of memd's own commits", attr="git_author"),
    SettingSpec(
        "git",
        "repository",
        "choice",
        "any",
        "any: commit to the vault's repository, also one enclosing it; own: only to one whose root is the vault",
        attr="git_repository",
        shown="hidden",
        choices=("any", "own"),
    ),
    SettingSpec(
        "vault",
        "lock_timeout",
        "duration",
        "10s",
        "how long a writer waits for another one to finish",
        env="MEMD_LOCK_TIMEOUT",
        attr="lock_timeout",
    ),
    SettingSpec(
        "index",
        "embedding",
        "str",
        "minilm-l6",
        "sentence-embedding model for search by meaning; none = words only",
        env="MEMD_EMBEDDING",
        attr="embedding",
    ),
    SettingSpec(
        "index",
        "backend",
        "choice",
        "auto",
        "search engine: auto (tantivy, or whoosh where tantivy is not installed), tantivy, whoosh",
        env="MEMD_INDEX_BACKEND",
        attr="index_backend",
        choices=("auto", "whoosh", "tantivy"),  # auto, then the names memd/index/backends.py registers
    ),
    SettingSpec(
        "vault",
        "ignore",
        "patterns",
        None,
        'notes that are not memory, e.g. ["templates/", "*.draft.md"]',
        attr="ignore",
        shown="hidden",
    ),
    ENGINE,
    SettingSpec(
        "llm",
        "base_url",
        "url",
        None,
        "OpenAI-compatible endpoint (default: OpenAI)",
        env="OPENAI_BASE_URL",
        attr="llm.base_url",
        shown="example",
        example="http://127.0.0.1:11434/v1",
    ),
    SettingSpec(
        "llm",
        "model",
        "str",
        None,
        "model name; setting it turns the llm engine on",
        env="MEMD_MODEL",
        attr="llm.model",
        shown="example",
        example="qwen2.5:7b-instruct",
    ),
    SettingSpec(
        "llm",
        "ask_model",
        "str",
        None,
        "a different model for `memd ask` (default: llm.model)",
        attr="llm.ask_model",
        shown="example",
        example="",
    ),
    SettingSpec(
        "llm",
        "api_key_env",
        "str",
        "OPENAI_API_KEY",
        "the variable holding the key (local servers need none)",
        attr="llm.api_key_env",
    ),
    SettingSpec(
        "llm", "timeout", "duration", "60s", "how long to wait for one model call", attr="llm.timeout", above_zero=True
    ),
    SettingSpec(
        "llm", "max_retries", "count", 2, "retries of a rate-limited (HTTP 429) model call", attr="llm.max_retries"
    ),
    SettingSpec(
        "llm",
        "context_tokens",
        "int",
        None,
        "the model's context window (default: what the server reports, else 4096)",
        attr="llm.context_tokens",
        shown="example",
        example=4096,
    ),
    SettingSpec(
        "llm",
        "budget_time",
        "duration",
        "10m",
        "model time one consolidation or ingest may spend; then the rest is done offline",
        attr="llm.budget_time",
    ),
    SettingSpec(
        "llm",
        "budget_tokens",
        "int",
        200000,
        "model tokens one consolidation or ingest may spend",
        attr="llm.budget_tokens",
    ),
    SettingSpec(
        "llm",
        "breaker_failures",
        "int",
        2,
        "endpoint failures in a row (timeout, refused, HTTP 5xx) before it is left alone",
        attr="llm.breaker_failures",
    ),
    SettingSpec("llm", "breaker_cooldown", "duration", "5m", "... for this long", attr="llm.breaker_cooldown"),
    SettingSpec(
        "llm",
        "gating",
        "choice",
        "recurrence",
        "recurrence: the model judges only what the offline rules cannot settle; off: every step",
        attr="llm.gating",
        choices=("recurrence", "off"),
    ),
    SettingSpec(
        "sync",
        "remote",
        "str",
        None,
        "the daemon syncs with this git remote (`memd sync` defaults to origin)",
        attr="sync_remote",
        shown="example",
        example="origin",
    ),
    SettingSpec(
        "sync",
        "interval",
        "interval",
        "5m",
        "how often, and right after each consolidation",
        attr="sync_interval",
        above_zero=True,
    ),
)

HEADER = "# memd settings for this vault (committed with it). Durations: 90s, 15m, 1h, 2d.\n"
# Said once above a table in the default config.toml.
TABLE_NOTES = {
    "sync": "# One memory on several machines: `memd sync` pushes and pulls through a git\n"
    "# remote; with `remote` set, the daemon syncs every `interval` and after each\n"
    "# consolidation (backing off while the remote is unreachable).\n",
    "llm": "# A language model makes consolidation and `memd ask` better; without one the\n"
    "# offline engine does everything. Any OpenAI-compatible endpoint works.\n",
}


def spec_for(key: str) -> SettingSpec:
    from memd.core.errors import ConfigError

    for spec in SETTINGS:
        if spec.key == key:
            return spec
    names = ", ".join(spec.key for spec in SETTINGS)
    raise ConfigError(f"unknown setting {key!r}; known settings: {names}")


def toml_value(value: str | int) -> str:
    return str(value) if isinstance(value, int) else '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def default_config_text() -> str:
    """The ``config.toml`` a new vault gets: every table, its settings and what they mean."""
    tables: dict[str, list[SettingSpec]] = {}
    for spec in SETTINGS:
        if spec.shown != "hidden":
            tables.setdefault(spec.table, []).append(spec)
    out = [HEADER]
    for table, specs in tables.items():
        rows = []
        for spec in specs:
            if spec.shown == "example":
                shown = spec.example if spec.example is not None else ""
                env = f"; env {spec.env}" if spec.env else ""
                rows.append((f"# {spec.name} = {toml_value(shown)}", f"{spec.help}{env}"))
            elif spec.default is not None:
                rows.append((f"{spec.name} = {toml_value(spec.default)}", spec.help))
        width = max(len(left) for left, _ in rows) + 4
        out.append("\n" + TABLE_NOTES.get(table, "") + f"[{table}]\n")
        out += [f"{left:<{width}}# {comment}\n" if comment else f"{left}\n" for left, comment in rows]
    return "".join(out)


def resolve(raw: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Every setting's typed value by key: the environment, else the file, else the default.
    Raises FormatError for a value that does not fit its setting."""
    values: dict[str, Any] = {}
    for spec in SETTINGS:
        table = raw.get(spec.table, {})
        said = env.get(spec.env) if spec.env else None
        from_env = bool(said)
        if from_env:
            value: Any = said
        elif isinstance(table, dict) and spec.name in table:
            value = table[spec.name]
        else:
            value = spec.default
        values[spec.key] = spec.convert(value, from_env=from_env)
    for spec in SETTINGS:
        if spec.kind == "choice" and values[spec.key] is None and spec.needs:
            # The default choice is the first whose needs are met (a model set -> the llm engine).
            values[spec.key] = next((c for c, need, _ in spec.needs if values.get(need)), spec.choices[0])
        for choice, need, message in spec.needs:
            if values[spec.key] == choice and not values.get(need):
                raise FormatError(message)
    return values
