"""The chat exports memd knows by shape: Claude Code sessions, ChatGPT and
claude.ai ``conversations.json``, and LoCoMo.

Each turn carries its conversation's identity (``thread``) so a later export
of the same conversations, or a session captured again as it grows, adds only
what is new (sources.py matches turns by thread, speaker, time and text).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memd.core.errors import MemdError
from memd.ingest.turns import ASSISTANT, Parsed, Rejected, Turn, normalise_time, text_of

_DIA = re.compile(r"^D(\d+):")
# Claude Code replaces a long context with a summary it sends as a user
# message; it restates the conversation, it is not something the person said.
_CONTINUED = "This session is being continued from a previous conversation"


# -- Claude Code --------------------------------------------------------------


def is_claude_line(row: dict[str, Any]) -> bool:
    return row.get("type") in ("user", "assistant") and isinstance(row.get("message"), dict)


def claude_code(rows: list[dict[str, Any]], stem: str) -> Parsed:
    titles = [str(r["summary"]).strip() for r in rows if r.get("type") == "summary" and r.get("summary")]
    session = next((str(r["sessionId"]) for r in rows if isinstance(r.get("sessionId"), str)), None)
    thread = f"claude-code:{session or stem}"
    turns = []
    for row in rows:
        if not is_claude_line(row) or row.get("isMeta") or row.get("isSidechain"):
            continue
        if row.get("isCompactSummary") or row.get("isVisibleInTranscriptOnly"):
            continue
        content = row["message"].get("content")
        # Tool calls, tool results and thinking are not conversation.
        if isinstance(content, list):
            content = [p for p in content if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")]
        text = text_of(content)
        if not text or text.startswith(("<command-", "<local-command", "Caveat: ", _CONTINUED)):
            continue
        speaker = "User" if row["type"] == "user" else ASSISTANT
        turns.append(Turn(speaker, text, normalise_time(row.get("timestamp")), thread=thread))
    if not turns:
        raise Rejected("the Claude Code session has no user or assistant text")
    return Parsed("claude-code", tuple(turns), title=titles[-1] if titles else None)


# -- ChatGPT ------------------------------------------------------------------


def chatgpt(conversations: list[dict[str, Any]]) -> Parsed:
    turns: list[Turn] = []
    for number, conversation in enumerate(conversations, start=1):
        title = str(conversation.get("title") or f"Conversation {number}").strip()
        ident = conversation.get("id") or conversation.get("conversation_id")
        thread = f"chatgpt:{ident}" if ident else f"chatgpt:{title}|{conversation.get('create_time')}"
        for node in _main_branch(conversation.get("mapping") or {}, conversation.get("current_node")):
            message = node.get("message") or {}
            role = ((message.get("author") or {}).get("role")) or ""
            if role not in ("user", "assistant"):
                continue
            if (message.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
                continue
            text = text_of((message.get("content") or {}).get("parts") or [])
            if text:
                when = normalise_time(message.get("create_time"))
                speaker = "User" if role == "user" else ASSISTANT
                turns.append(Turn(speaker, text, when, group=title, thread=thread))
    if not turns:
        raise Rejected("the ChatGPT export has no user or assistant messages")
    return Parsed("chatgpt", tuple(turns))


def _main_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The branch the user last saw: from ``current_node`` up to the root."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [key for key, node in mapping.items() if not node.get("children")]
        current = leaves[-1] if leaves else None
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        chain.append(mapping[current])
        current = mapping[current].get("parent")
    return chain[::-1]


# -- claude.ai ----------------------------------------------------------------


def claude_ai(conversations: list[dict[str, Any]]) -> Parsed:
    """The claude.ai data export: conversations with ``chat_messages`` whose
    ``sender`` is ``human`` or ``assistant``."""
    turns: list[Turn] = []
    for number, conversation in enumerate(conversations, start=1):
        title = str(conversation.get("name") or f"Conversation {number}").strip()
        ident = conversation.get("uuid")
        thread = f"claude-ai:{ident}" if ident else f"claude-ai:{title}|{conversation.get('created_at')}"
        for message in conversation.get("chat_messages") or []:
            if not isinstance(message, dict):
                continue
            sender = str(message.get("sender") or "")
            if sender not in ("human", "assistant"):
                continue
            text = text_of(message.get("text")) or text_of(message.get("content"))
            if text:
                speaker = "User" if sender == "human" else ASSISTANT
                when = normalise_time(message.get("created_at"))
                turns.append(Turn(speaker, text, when, group=title, thread=thread))
    if not turns:
        raise Rejected("the claude.ai export has no human or assistant messages")
    return Parsed("claude-ai", tuple(turns))


# -- LoCoMo -------------------------------------------------------------------


def locomo(path: Path | None) -> Parsed:
    from memd.ingest.locomo import load_locomo

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
