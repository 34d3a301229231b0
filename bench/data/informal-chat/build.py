"""Build informal-chat.json (the format `memd eval locomo` reads) from the hand-written chats here.

Each chat-N.txt holds the sessions that carry the answers; questions.json the questions, their
answers and evidence turns; filler.txt everyday chatter. Between the written sessions, filler
sessions of 4-12 lines are laid on the same and following days (several sittings a day), drawn
with a fixed seed, so each conversation grows to a few hundred turns and the file is the same on
every build. Filler turns get their own dia_ids (F<n>:<m>) and are never evidence.

    python bench/data/informal-chat/build.py
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILLER_SESSIONS_BETWEEN = (4, 8)
TIME_FORMAT = "%I:%M %p on %d %B, %Y"


def parse(path: Path) -> tuple[str, list[str], list[tuple[datetime, list[tuple[str, str]]]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    _, _, sample_id, a, b = lines[0].split()
    names = {a[0]: a, b[0]: b}
    sessions: list[tuple[datetime, list[tuple[str, str]]]] = []
    for line in lines[1:]:
        if not line.strip():
            continue
        if line.startswith("@ "):
            sessions.append((datetime.strptime(line[2:].strip().replace(",", ""), "%I:%M %p on %d %B %Y"), []))
            continue
        who, text = line.split(":", 1)
        sessions[-1][1].append((names[who.strip()], text.strip()))
    return sample_id, [a, b], sessions


def build() -> list[dict]:
    filler = [
        line
        for line in (HERE / "filler.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    questions = json.loads((HERE / "questions.json").read_text(encoding="utf-8"))
    out = []
    for path in sorted(HERE.glob("c*.txt")):
        sample_id, speakers, sessions = parse(path)
        rng = random.Random(sample_id)
        conversation: dict = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
        number = 0
        fillers = 0
        for i, (moment, turns) in enumerate(sessions):
            number += 1
            conversation[f"session_{number}_date_time"] = moment.strftime(TIME_FORMAT).lstrip("0")
            conversation[f"session_{number}"] = [
                {"speaker": who, "dia_id": f"D{i + 1}:{n}", "text": text} for n, (who, text) in enumerate(turns, 1)
            ]
            stop = sessions[i + 1][0] if i + 1 < len(sessions) else moment + timedelta(days=2)
            for _ in range(rng.randint(*FILLER_SESSIONS_BETWEEN)):
                at = moment + (stop - moment) * rng.uniform(0.05, 0.95)
                fillers += 1
                number += 1
                lines = rng.sample(filler, rng.randint(4, 12))
                conversation[f"session_{number}_date_time"] = at.strftime(TIME_FORMAT).lstrip("0")
                conversation[f"session_{number}"] = [
                    {"speaker": speakers[(n + rng.randint(0, 1)) % 2], "dia_id": f"F{fillers}:{n}", "text": text}
                    for n, text in enumerate(lines, 1)
                ]
        qa = [{"question": q, "answer": a, "evidence": ev, "category": c} for q, a, ev, c in questions[sample_id]]
        out.append({"sample_id": sample_id, "conversation": _in_time_order(conversation), "qa": qa})
    return out


def _in_time_order(conversation: dict) -> dict:
    """Sessions renumbered by their time, as the eval reads them in number order."""
    keys = sorted(
        (k for k in conversation if k.startswith("session_") and not k.endswith("date_time")),
        key=lambda k: datetime.strptime(conversation[f"{k}_date_time"].replace(",", ""), "%I:%M %p on %d %B %Y"),
    )
    out = {"speaker_a": conversation["speaker_a"], "speaker_b": conversation["speaker_b"]}
    for n, key in enumerate(keys, 1):
        out[f"session_{n}_date_time"] = conversation[f"{key}_date_time"]
        out[f"session_{n}"] = conversation[key]
    return out


if __name__ == "__main__":
    data = build()
    (HERE / "informal-chat.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for item in data:
        turns = sum(len(v) for k, v in item["conversation"].items() if k.startswith("session_") and isinstance(v, list))
        print(item["sample_id"], turns, "turns", len(item["qa"]), "questions")
