"""Input formats: bytes in, a note or a list of turns out.

Recognised (by extension, then by shape):

- ``.md`` ``.markdown`` ``.txt`` ``.text`` or no extension: a note.
- ``.json`` / ``.jsonl`` / ``.ndjson``: a chat transcript, one of
  LoCoMo (a list of ``{"conversation": ..., "qa": ...}``), ChatGPT's export
  ``conversations.json`` (conversations with a ``mapping`` of messages),
  Claude Code session JSONL (lines of ``{"type": "user"|"assistant",
  "message": {...}}``), or generic chat: a list (or ``{"messages": [...]}``, or
  JSONL lines) of objects with a speaker (``role``/``speaker``/``name``/
  ``author``), a text (``content``/``text``/``message``) and optionally a time
  (``time``/``timestamp``/``created_at``/``date``; ISO 8601 or epoch seconds).

Anything else is rejected with a reason a person can act on; nothing here
raises anything but ``Rejected`` for a bad input.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import FormatError, MemdError
from ..timeutil import format_time, parse_time

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ""})
JSON_SUFFIXES = frozenset({".json"})
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
_SPEAKER_KEYS = ("name", "speaker", "author", "sender", "from", "role", "user")
_TEXT_KEYS = ("content", "text", "message", "body", "value")
_TIME_KEYS = ("time", "timestamp", "created_at", "date", "datetime", "created", "create_time", "ts")
_DIA = re.compile(r"^D(\d+):")


class Rejected(MemdError):
    """An input memd cannot ingest; the message says why."""


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str
    time: str | None = None  # memd's ISO form, or None when the input had none
    ref: str | None = None  # the input's own id for the turn (LoCoMo dia_id)
    group: str | None = None  # the heading it sits under: a conversation, a session


@dataclass(frozen=True)
class Parsed:
    format: str  # note | chat | claude-code | chatgpt | locomo
    turns: tuple[Turn, ...] = ()
    note: str | None = None


def parse(name: str, data: bytes, path: Path | None = None) -> Parsed:
    """Recognise and parse one input file (``path`` lets LoCoMo reuse its loader)."""
    suffix = Path(name).suffix.lower()
    if b"\x00" in data[:65536]:
        raise Rejected("binary file (memd ingests text notes and JSON/JSONL chat transcripts)")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise Rejected(f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})") from None
    if not text.strip():
        raise Rejected("empty file")
    if suffix in NOTE_SUFFIXES:
        return Parsed("note", note=text.replace("\r\n", "\n"))
    if suffix in JSON_SUFFIXES:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise Rejected(f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
        return _shape(value, path)
    if suffix in JSONL_SUFFIXES:
        return _jsonl(text)
    raise Rejected(f"unknown format {suffix!r} (memd ingests .md, .txt, .json and .jsonl files)")


def _shape(value: Any, path: Path | None) -> Parsed:
    try:
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            if "conversation" in value[0] and ("qa" in value[0] or "sample_id" in value[0]):
                return _locomo(path)
            if "mapping" in value[0]:
                return _chatgpt(value)
        if isinstance(value, dict) and "mapping" in value:
            return _chatgpt([value])
        messages = _message_list(value)
        if messages is not None:
            return _generic(messages)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise Rejected(f"malformed transcript ({type(err).__name__}: {err})") from None
    raise Rejected(
        "unknown JSON format (expected chat messages with role/content, a ChatGPT conversations.json, "
        "a Claude Code session or LoCoMo)"
    )


def _message_list(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, dict):
        for key in ("messages", "conversation", "turns", "chat", "dialogue"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if not (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
        return None
    with_text = [v for v in value if _pick(v, _TEXT_KEYS) is not None]
    # Most messages carry text; a few (tool calls, empty replies) may not.
    return value if len(with_text) * 2 >= len(value) else None


def _jsonl(text: str) -> Parsed:
    rows: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise Rejected(f"malformed JSON on line {number}: {err.msg}") from None
    if rows and all(isinstance(r, dict) for r in rows) and any(_is_claude_line(r) for r in rows):
        return _claude_code(rows)
    messages = _message_list(rows)
    if messages is None:
        raise Rejected("unknown JSONL format (expected one chat message per line with role/content)")
    try:
        return _generic(messages)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise Rejected(f"malformed transcript ({type(err).__name__}: {err})") from None


# -- generic chat -------------------------------------------------------------


def _generic(messages: list[dict[str, Any]]) -> Parsed:
    turns = []
    for message in messages:
        text = _text_of(_pick(message, _TEXT_KEYS))
        if not text:
            continue
        turns.append(Turn(_speaker_of(message), text, normalise_time(_pick(message, _TIME_KEYS))))
    if not turns:
        raise Rejected("the transcript has no message with text")
    return Parsed("chat", tuple(turns))


def _pick(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if item.get(key) not in (None, ""):
            return item[key]
    return None


def _speaker_of(message: dict[str, Any]) -> str:
    value = _pick(message, _SPEAKER_KEYS)
    if isinstance(value, dict):
        value = value.get("name") or value.get("role")
    name = str(value or "unknown").strip()
    return name[:1].upper() + name[1:] if name.islower() else name


def _text_of(content: Any) -> str:
    """Text of a message body: a string, a list of parts, or ``{"parts": [...]}``."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, dict):
        if "parts" in content:
            return _text_of(content["parts"])
        if content.get("type", "text") == "text" and isinstance(content.get("text"), str):
            return content["text"].strip()
        return ""
    if isinstance(content, list):
        return "\n\n".join(t for t in (_text_of(part) for part in content) if t).strip()
    return ""


def normalise_time(value: Any) -> str | None:
    """ISO 8601 text or epoch seconds (or milliseconds) -> memd's form; else None."""
    try:
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return format_time(datetime.fromtimestamp(seconds, UTC))
        return format_time(parse_time(str(value)))
    except (FormatError, ValueError, OverflowError, OSError):
        return None


# -- Claude Code --------------------------------------------------------------


def _is_claude_line(row: dict[str, Any]) -> bool:
    return row.get("type") in ("user", "assistant") and isinstance(row.get("message"), dict)


def _claude_code(rows: list[dict[str, Any]]) -> Parsed:
    turns = []
    for row in rows:
        if not _is_claude_line(row) or row.get("isMeta") or row.get("isSidechain"):
            continue
        content = row["message"].get("content")
        # Tool calls, tool results and thinking are not conversation.
        if isinstance(content, list):
            content = [p for p in content if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")]
        text = _text_of(content)
        if not text or text.startswith(("<command-", "<local-command", "Caveat: ")):
            continue
        speaker = "User" if row["type"] == "user" else "Assistant"
        turns.append(Turn(speaker, text, normalise_time(row.get("timestamp"))))
    if not turns:
        raise Rejected("the Claude Code session has no user or assistant text")
    return Parsed("claude-code", tuple(turns))


# -- ChatGPT ------------------------------------------------------------------


def _chatgpt(conversations: list[dict[str, Any]]) -> Parsed:
    turns: list[Turn] = []
    for number, conversation in enumerate(conversations, start=1):
        title = str(conversation.get("title") or f"Conversation {number}").strip()
        for node in _main_branch(conversation.get("mapping") or {}, conversation.get("current_node")):
            message = node.get("message") or {}
            role = ((message.get("author") or {}).get("role")) or ""
            if role not in ("user", "assistant"):
                continue
            if (message.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
                continue
            text = _text_of((message.get("content") or {}).get("parts") or [])
            if text:
                when = normalise_time(message.get("create_time"))
                turns.append(Turn("User" if role == "user" else "Assistant", text, when, group=title))
    if not turns:
        raise Rejected("the ChatGPT export has no user or assistant messages")
    return Parsed("chatgpt", tuple(turns))


def _main_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The branch the user last saw: from ``current_node`` up to the root."""
    if current not in mapping:
        leaves = [key for key, node in mapping.items() if not node.get("children")]
        current = leaves[-1] if leaves else None
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while current in mapping and current not in seen:
        seen.add(current)
        chain.append(mapping[current])
        current = mapping[current].get("parent")
    return chain[::-1]


# -- LoCoMo -------------------------------------------------------------------


def _locomo(path: Path | None) -> Parsed:
    from ..evaluate import load_locomo

    if path is None:
        raise Rejected("LoCoMo input must be read from a file")
    try:
        conversations = load_locomo(path)
    except MemdError as err:
        raise Rejected(str(err)) from None
    several = len(conversations) > 1
    turns = []
    for conversation in conversations:
        for turn in conversation.turns:
            match = _DIA.match(turn.dia_id)
            session = f"Session {match.group(1)}" if match else "Session"
            group = f"{conversation.sample_id}, {session.lower()}" if several else session
            turns.append(Turn(turn.speaker, turn.text, turn.time, turn.dia_id, group))
    if not turns:
        raise Rejected("the LoCoMo file has no dialogue turns")
    return Parsed("locomo", tuple(t for t in turns if t.text))
