"""What every input format yields: turns (or a note), and the helpers the
formats share to read message bodies, speakers and times."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memd.core.errors import FormatError, MemdError
from memd.core.timeutil import format_time, parse_time

_SPEAKER_KEYS = ("name", "speaker", "author", "sender", "from", "role", "user")
ASSISTANT = "Assistant"  # the speaker of a model's turns, in every chat format
TEXT_KEYS = ("content", "text", "message", "body", "value")
_TIME_KEYS = ("time", "timestamp", "created_at", "date", "datetime", "created", "create_time", "ts")
# Message bodies nest parts in lists and dicts; deeper than this is no message.
_MAX_PARTS_DEPTH = 16


class Rejected(MemdError):
    """An input memd cannot ingest; the message says why."""


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str
    time: str | None = None  # memd's ISO form, or None when the input had none
    ref: str | None = None  # the input's own id for the turn (LoCoMo dia_id)
    group: str | None = None  # the heading it sits under: a conversation, a session
    thread: str | None = None  # the conversation's identity (e.g. "chatgpt:<id>"), kept across exports


@dataclass(frozen=True)
class Parsed:
    format: str  # note | chat | claude-code | chatgpt | claude-ai | locomo
    turns: tuple[Turn, ...] = ()
    note: str | None = None
    title: str | None = None  # a session's own title (Claude Code's summary line)
    warnings: tuple[str, ...] = ()


# -- generic chat -------------------------------------------------------------


def generic(messages: list[dict[str, Any]]) -> Parsed:
    turns = []
    for message in messages:
        text = text_of(pick(message, TEXT_KEYS))
        if not text:
            continue
        turns.append(Turn(speaker_of(message), text, normalise_time(pick(message, _TIME_KEYS))))
    if not turns:
        raise Rejected("the transcript has no message with text")
    return Parsed("chat", tuple(turns))


def pick(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if item.get(key) not in (None, ""):
            return item[key]
    return None


def speaker_of(message: dict[str, Any]) -> str:
    value = pick(message, _SPEAKER_KEYS)
    if isinstance(value, dict):
        value = value.get("name") or value.get("role")
    name = str(value or "unknown").strip()[:100]
    return name[:1].upper() + name[1:] if name.islower() else name


def text_of(content: Any, depth: int = 0) -> str:
    """Text of a message body: a string, a list of parts, or ``{"parts": [...]}``."""
    if depth > _MAX_PARTS_DEPTH:
        return ""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, dict):
        if "parts" in content:
            return text_of(content["parts"], depth + 1)
        if content.get("type", "text") == "text" and isinstance(content.get("text"), str):
            return content["text"].strip()
        return ""
    if isinstance(content, list):
        return "\n\n".join(t for t in (text_of(part, depth + 1) for part in content) if t).strip()
    return ""


def normalise_time(value: Any) -> str | None:
    """ISO 8601 text or epoch seconds (or milliseconds) -> memd's form; else None."""
    try:
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return format_time(datetime.fromtimestamp(seconds, UTC))
        if not isinstance(value, str) or len(value) > 64:
            return None
        return format_time(parse_time(value))
    except (FormatError, ValueError, OverflowError, OSError):
        return None
