"""LoCoMo conversations (a benchmark of long dialogues with questions and the
turns that answer them), read from its JSON file.

``memd ingest`` takes such a file like any chat transcript (chats.py), and
``memd eval locomo`` (memd/app/evaluate.py) measures retrieval on its
questions; both read it here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memd.core.errors import FormatError, NotFound

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
UNANSWERABLE = 5  # adversarial: the conversation holds no answer; asked only for abstention
_SESSION = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    time: str | None


@dataclass(frozen=True)
class Question:
    question: str
    evidence: tuple[str, ...]
    category: int
    answer: str = ""


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    unanswerable: tuple[Question, ...] = ()


def session_time(text: str) -> str | None:
    """``1:56 pm on 8 May, 2023`` -> ``2023-05-08T13:56:00Z`` (None when unparseable)."""
    cleaned = " ".join(text.replace(",", " ").split())
    for pattern in ("%I:%M %p on %d %B %Y", "%I:%M%p on %d %B %Y", "%d %B %Y"):
        try:
            return datetime.strptime(cleaned, pattern).strftime("%Y-%m-%dT%H:%M:00Z")
        except ValueError:
            continue
    return None


def load_locomo(path: Path) -> list[Conversation]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except (OSError, ValueError) as err:
        raise FormatError(f"{path}: not a LoCoMo JSON file ({err})") from None
    if not isinstance(data, list):
        raise FormatError(f"{path}: expected a list of conversations")
    conversations = []
    for number, item in enumerate(data, start=1):
        try:
            conversations.append(_conversation(item, number))
        except (KeyError, TypeError, AttributeError) as err:
            raise FormatError(f"{path}: conversation {number} is malformed (missing {err})") from None
    return conversations


def _conversation(item: dict[str, Any], number: int) -> Conversation:
    talk = item["conversation"]
    sessions = sorted(int(m.group(1)) for key in talk if (m := _SESSION.match(key)))
    turns: list[Turn] = []
    for n in sessions:
        when = session_time(str(talk.get(f"session_{n}_date_time", "")))
        for turn in talk[f"session_{n}"] or []:
            text = str(turn.get("text", "")).strip()
            caption = turn.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]".strip()
            turns.append(Turn(str(turn["dia_id"]), str(turn["speaker"]), text, when))
    questions = [
        Question(
            str(q["question"]),
            tuple(str(e) for e in q.get("evidence", [])),
            int(q["category"]),
            str(q.get("answer", "")),
        )
        for q in item.get("qa", [])
        if int(q.get("category", 0)) in (*CATEGORIES, UNANSWERABLE)
    ]
    return Conversation(
        str(item.get("sample_id", number)),
        tuple(turns),
        tuple(q for q in questions if q.category in CATEGORIES),
        tuple(q for q in questions if q.category == UNANSWERABLE),
    )
