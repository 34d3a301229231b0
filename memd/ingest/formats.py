"""Input formats: bytes in, a note or a list of turns out.

Recognised (by extension, then by shape):

- ``.md`` ``.markdown`` ``.txt`` ``.text`` or no extension: a note.
- ``.json`` / ``.jsonl`` / ``.ndjson``: a chat transcript, one of
  LoCoMo (a list of ``{"conversation": ..., "qa": ...}``), ChatGPT's export
  ``conversations.json`` (conversations with a ``mapping`` of messages), the
  claude.ai export ``conversations.json`` (conversations with
  ``chat_messages``), Claude Code session JSONL (lines of ``{"type":
  "user"|"assistant", "message": {...}}``), or generic chat: a list (or
  ``{"messages": [...]}``, or JSONL lines) of objects with a speaker
  (``role``/``speaker``/``name``/``author``), a text
  (``content``/``text``/``message``) and optionally a time
  (``time``/``timestamp``/``created_at``/``date``; ISO 8601 or epoch seconds).

Transcripts that name their conversations (ChatGPT, claude.ai, Claude Code)
give each turn a ``thread``: re-importing a newer export or a grown session
adds only the turns not seen before (see sources.py).

Anything else is rejected with a reason a person can act on; nothing here
raises anything but ``Rejected`` for a bad input, whatever the input holds
(JSON nested past the stack, 5,000-digit numbers, binary bytes). A JSONL file
whose last line is cut off (a session still being written) keeps the lines
before it and says so in ``Parsed.warnings``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memd.ingest import chats
from memd.ingest.turns import TEXT_KEYS, Parsed, Rejected, Turn, generic, normalise_time, pick, text_of

__all__ = ["Parsed", "Rejected", "Turn", "load_json", "normalise_time", "parse", "text_of"]

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ""})
JSON_SUFFIXES = frozenset({".json"})
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
# Digits past this are no number a transcript means (an id, a timestamp); the
# text is kept as it is instead of asking Python for a 5,000-digit integer.
_MAX_INT_DIGITS = 40


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
    try:
        if suffix in JSON_SUFFIXES:
            return _shape(load_json(text), path)
        if suffix in JSONL_SUFFIXES:
            return _jsonl(text, Path(name).name)
    except RecursionError:
        raise Rejected("the transcript is nested too deeply to be a chat") from None
    raise Rejected(f"unknown format {suffix!r} (memd ingests .md, .txt, .json and .jsonl files)")


def load_json(text: str, where: str = "") -> Any:
    """``json.loads`` that fails only with ``Rejected`` (one line, with the place)."""
    try:
        return json.loads(text, parse_int=_int)
    except json.JSONDecodeError as err:
        place = f"column {err.colno}" if where else f"line {err.lineno} column {err.colno}"
        raise Rejected(f"malformed JSON{where}: {err.msg.removesuffix(' at')} ({place})") from None
    except RecursionError:
        raise Rejected(f"malformed JSON{where}: nested too deeply (arrays or objects inside each other)") from None
    except ValueError as err:
        raise Rejected(f"malformed JSON{where}: {str(err).splitlines()[0][:100]}") from None


def _int(digits: str) -> int | str:
    return int(digits) if len(digits.lstrip("-")) <= _MAX_INT_DIGITS else digits


def _shape(value: Any, path: Path | None) -> Parsed:
    try:
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            if "conversation" in value[0] and ("qa" in value[0] or "sample_id" in value[0]):
                return chats.locomo(path)
            if "mapping" in value[0]:
                return chats.chatgpt(value)
            if "chat_messages" in value[0]:
                return chats.claude_ai(value)
        if isinstance(value, dict) and "mapping" in value:
            return chats.chatgpt([value])
        if isinstance(value, dict) and "chat_messages" in value:
            return chats.claude_ai([value])
        messages = _message_list(value)
        if messages is not None:
            return generic(messages)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise Rejected(f"malformed transcript ({type(err).__name__}: {str(err)[:100]})") from None
    raise Rejected(
        "unknown JSON format (expected chat messages with role/content, a ChatGPT or claude.ai "
        "conversations.json, a Claude Code session or LoCoMo)"
    )


def _message_list(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, dict):
        for key in ("messages", "conversation", "turns", "chat", "dialogue"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if not (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
        return None
    with_text = [v for v in value if pick(v, TEXT_KEYS) is not None]
    # Most messages carry text; a few (tool calls, empty replies) may not.
    return value if len(with_text) * 2 >= len(value) else None


def _jsonl(text: str, name: str) -> Parsed:
    rows: list[Any] = []
    warnings: list[str] = []
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    for index, (number, line) in enumerate(lines):
        try:
            rows.append(load_json(line, f" on line {number}"))
        except Rejected as err:
            if index < len(lines) - 1 or not rows:
                raise
            # The last line of a session still being written is often cut off.
            warnings.append(f"{name}:{number}: skipped this line ({str(err).replace(f' on line {number}', '')})")
    if rows and all(isinstance(r, dict) for r in rows) and any(chats.is_claude_line(r) for r in rows):
        return _with_warnings(chats.claude_code(rows, Path(name).stem), warnings)
    messages = _message_list(rows)
    if messages is None:
        raise Rejected("unknown JSONL format (expected one chat message per line with role/content)")
    try:
        return _with_warnings(generic(messages), warnings)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise Rejected(f"malformed transcript ({type(err).__name__}: {str(err)[:100]})") from None


def _with_warnings(parsed: Parsed, warnings: list[str]) -> Parsed:
    if not warnings:
        return parsed
    return Parsed(parsed.format, parsed.turns, parsed.note, parsed.title, (*parsed.warnings, *warnings))
