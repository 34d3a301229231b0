"""The endpoint's health and the circuit breaker in front of it.

After ``threshold`` consecutive endpoint failures (timeouts, refused
connections, HTTP 5xx, the same HTTP 4xx refusal again and again) the
breaker opens: the rest of the run makes no model
calls, and later runs make none until ``cooldown`` has passed; then one call
is let through, and one more failure opens it again. The health (last
success, last failure and its cause, open until when, the context window the
server reported) is kept in ``.memd/logs/endpoint.json`` so that ``memd
status`` and the daemon can show it. The file is machine-local and ignored by
git; losing it only resets the breaker.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memd.core.atomic import atomic_write
from memd.core.errors import FormatError, MemdError
from memd.core.timeutil import format_time, now, parse_time


@dataclass(frozen=True)
class Health:
    endpoint: str = ""
    last_success: str | None = None
    last_failure: str | None = None
    last_cause: str | None = None
    failures: int = 0  # consecutive
    open_until: str | None = None
    context_tokens: int | None = None  # what the server reported for the model, if it did
    context_model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def health_path(meta_dir: Path) -> Path:
    return meta_dir / "logs" / "endpoint.json"


def read_health(path: Path | None) -> Health:
    if path is None or not path.exists():
        return Health()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {k: data[k] for k in Health.__dataclass_fields__ if k in data}
        return Health(**known)
    except (OSError, ValueError, TypeError):
        return Health()  # a damaged health file only resets the breaker


def open_until(health: Health, moment: datetime | None = None) -> datetime | None:
    """When an open breaker lets the next call through; None when closed."""
    if not health.open_until:
        return None
    try:
        until = parse_time(health.open_until)
    except FormatError:
        return None
    return until if until > (moment or now()) else None


def describe(health: Health) -> dict[str, Any] | None:
    """The health as front doors show it; None when no call was ever made."""
    if not health.endpoint:
        return None
    until = open_until(health)
    if until is not None:
        state = f"paused until {format_time(until)} ({health.last_cause})"
    elif health.failures:
        state = f"failing ({health.failures} in a row, last: {health.last_cause})"
    else:
        state = "ok"
    return {**health.to_json(), "open_until": format_time(until) if until else None, "state": state}


def _recent(stamp: str | None, moment: datetime, within: float = 60.0) -> bool:
    if not stamp:
        return False
    try:
        return (moment - parse_time(stamp)).total_seconds() < within
    except FormatError:
        return False


class Unavailable(MemdError):
    """No call was made: the breaker is open or the run's model budget is spent."""


class Breaker:
    def __init__(self, path: Path | None, endpoint: str, threshold: int, cooldown: float) -> None:
        self.path = path
        self.endpoint = endpoint
        self.threshold = max(1, threshold)
        self.cooldown = cooldown
        self.tripped: str | None = None  # the cause, once this run stopped calling
        self._health = read_health(path)
        if self._health.endpoint and self._health.endpoint != endpoint:
            self._health = Health(endpoint=endpoint)  # another endpoint's record says nothing about this one

    @property
    def health(self) -> Health:
        return self._health

    def begin_run(self) -> None:
        self.tripped = None

    def check(self) -> None:
        """Raise Unavailable when no call may be made now."""
        if self.tripped:
            raise Unavailable(f"the model endpoint is failing ({self.tripped})")
        until = open_until(self._health)
        if until is not None:
            self.tripped = f"{self._health.last_cause or 'failing'}; paused until {format_time(until)}"
            raise Unavailable(f"the model endpoint is failing ({self.tripped})")

    def success(self) -> None:
        moment = now()
        health = self._health
        if not health.failures and not health.open_until and _recent(health.last_success, moment):
            return  # nothing new to tell: spare the disk a write per call
        self._save(replace(health, last_success=format_time(moment), failures=0, open_until=None))

    def failure(self, cause: str, *, repeated: bool = False) -> bool:
        """Count a failure; True when this one opened the breaker. With
        ``repeated`` (a refused request: maybe its own fault) the count goes on
        only while the cause stays the same; another cause starts it again."""
        same = self._health.last_cause == cause or not repeated
        failures = self._health.failures + 1 if same else 1
        health = replace(self._health, last_failure=format_time(now()), last_cause=cause, failures=failures)
        opened = failures >= self.threshold
        if opened:
            health = replace(health, open_until=format_time(now() + timedelta(seconds=self.cooldown)))
            self.tripped = f"{cause}, {failures} failures in a row"
        self._save(health)
        return opened

    def remember_context(self, model: str, tokens: int | None) -> None:
        self._save(replace(self._health, context_tokens=tokens, context_model=model))

    def _save(self, health: Health) -> None:
        self._health = replace(health, endpoint=self.endpoint)
        if self.path is None:
            return
        with contextlib.suppress(OSError, MemdError):  # health is advisory: never let it fail a model step
            atomic_write(self.path, json.dumps(self._health.to_json(), indent=2) + "\n")
