"""Transcripts as they really arrive: newer exports of the same chats, a
session captured again as it grows, a last line cut off, compaction
summaries, session titles, turns without a time, the claude.ai export."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from memd.core.document import entry_json
from memd.ingest import ingest_file
from memd.vault.vault import Vault

from .conftest import Memd
from .exports import chatgpt

SESSION = "5c1f6a52-0d3e-4f7e-9a4b-1f2e3d4c5b6a"


def entries(vault: Vault) -> list[dict[str, Any]]:
    return [entry_json(e) for e in vault.read(vault.current).signed()]


def sources(vault: Vault) -> list[Path]:
    return sorted(vault.sources_dir.rglob("*.md"))


def ingest_chat(memd: Memd, folder: Path, chat: list[dict[str, str]]) -> dict[str, Any]:
    """Import ``chat`` (role/content messages) as a person would: a JSON file, then `memd ingest`."""
    path = folder / "chat.json"
    path.write_text(json.dumps(chat))
    result: dict[str, Any] = json.loads(memd("ingest", str(path), "--json").output)[0]
    return result


A1 = [("user", "We fly to Lisbon on 3 May."), ("assistant", "Noted: the Lisbon trip starts on 3 May.")]
A2 = [*A1, ("user", "Book a window seat for the Lisbon flight.")]
B = [("user", "The plumber comes on Thursday at eight."), ("assistant", "Noted: plumber Thursday at eight.")]


def test_a_newer_chatgpt_export_adds_only_new_turns_to_the_same_copy(vault: Vault, tmp_path: Path) -> None:
    first = tmp_path / "conversations.json"
    first.write_text(json.dumps(chatgpt({"a": A1})))
    one = ingest_file(vault, first)
    newer = tmp_path / "export-2" / "conversations.json"
    newer.parent.mkdir()
    newer.write_text(json.dumps(chatgpt({"a": A2, "b": B})))
    two = ingest_file(vault, newer)
    assert two.source == one.source and two.new_turns == 3  # updated in place, not conversations-2.md
    assert [p.name for p in sources(vault)] == ["conversations.md"]
    texts = [e["text"] for e in entries(vault)]
    assert len(texts) == len(set(texts)) == 4, texts  # no duplicate entries
    # "Noted: plumber Thursday at eight." only says back what the person said: it stays in the copy.
    assert not any(t.startswith("Assistant: Noted: plumber") for t in texts)
    copy = (vault.root / one.source).read_text()
    for _, text in [*A2, *B]:
        assert copy.count(text) == 1, text
    assert copy.index("Book a window seat") < copy.index("## Chat b")  # after the last turn of its conversation
    again = ingest_file(vault, newer)
    assert again.duplicate and len(entries(vault)) == 4
    subjects = subprocess.run(["git", "-C", str(vault.root), "log", "--format=%s"], capture_output=True, text=True)
    assert subjects.stdout.count("ingest: conversations.json") == 2


def claude_line(kind: str, text: str, minute: int | None, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"type": kind, "sessionId": SESSION, "message": {"role": kind, "content": text}, **extra}
    if minute is not None:
        row["timestamp"] = f"2026-11-20T10:{minute:02d}:00Z"
    return row


TURNS = [
    claude_line("user", "Please add retry logic to the uploader.", 0),
    claude_line("assistant", "I added exponential backoff to upload().", 1),
    claude_line("user", "Also cap the retries at five.", 2),
    claude_line("assistant", "Retries are now capped at five attempts.", 3),
    claude_line("user", "Log every retry with its delay.", 4),
    claude_line("assistant", "Each retry is logged with its delay in ms.", 5),
]


def write_session(path: Path, rows: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + tail)
    return path


def test_a_growing_session_captured_three_times_yields_each_turn_once(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    for count in (2, 4, 6):
        write_session(path, [{"type": "summary", "summary": "Uploader retries"}, *TURNS[:count]])
        memd("ingest", str(path))
    texts = [e["text"] for e in entries(vault)]
    assert len(texts) == 6 and len(set(texts)) == 6, texts
    [copy] = sources(vault)
    body = copy.read_text()
    for row in TURNS:
        assert body.count(row["message"]["content"]) == 1
    assert re.findall(r"\^t(\d+)$", body, re.MULTILINE) == ["1", "2", "3", "4", "5", "6"]
    assert "# Uploader retries" in body  # the session's own title


def test_a_truncated_last_line_keeps_the_rest_and_names_the_line(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    path = write_session(tmp_path / "live.jsonl", TURNS[:3], tail='{"type": "assistant", "message": {"role": "ass')
    result = memd("ingest", str(path), "--json")
    [report] = json.loads(result.stdout)
    assert report["entries"] == 3
    assert report["warnings"] == [
        "live.jsonl:4: skipped this line (malformed JSON: Unterminated string starting (column 43))"
    ]


def test_a_compaction_summary_is_not_something_the_user_said(vault: Vault, tmp_path: Path) -> None:
    summary = claude_line(
        "user",
        "This session is being continued from a previous conversation that ran out of context. Summary: ...",
        9,
        isCompactSummary=True,
    )
    path = write_session(tmp_path / "s.jsonl", [*TURNS[:2], summary, TURNS[2]])
    ingest_file(vault, path)
    texts = [e["text"] for e in entries(vault)]
    assert len(texts) == 3 and not any("continued from a previous" in t for t in texts)


def test_turns_without_a_time_take_the_time_of_the_turn_before(vault: Vault, tmp_path: Path) -> None:
    rows = [TURNS[0], claude_line("assistant", "Backoff doubles the delay each time.", None), TURNS[2]]
    ingest_file(vault, write_session(tmp_path / "s.jsonl", rows))
    times = [e["time"] for e in entries(vault)]
    assert times == ["2026-11-20T10:00:00Z", "2026-11-20T10:00:00Z", "2026-11-20T10:02:00Z"]


def test_the_claude_ai_export_imports(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    export = [
        {
            "uuid": "c-1",
            "name": "Garden plans",
            "created_at": "2026-03-01T09:00:00Z",
            "chat_messages": [
                {
                    "uuid": "m1",
                    "sender": "human",
                    "text": "We plant the tomatoes after the last frost in May.",
                    "created_at": "2026-03-01T09:00:00Z",
                },
                {
                    "uuid": "m2",
                    "sender": "assistant",
                    "text": "",
                    "created_at": "2026-03-01T09:00:30Z",
                    "content": [{"type": "text", "text": "Noted: tomatoes go in after the May frost."}],
                },
            ],
        }
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export))
    [report] = json.loads(memd("ingest", str(path), "--json").stdout)
    assert report["format"] == "claude-ai" and report["entries"] == 2
    texts = [e["text"] for e in entries(vault)]
    assert texts[0].startswith("User: We plant the tomatoes") and texts[1].startswith("Assistant: Noted")
    assert "## Garden plans" in (vault.root / report["source"]).read_text()


def test_a_large_inbox_file_is_ingested_in_steps_beside_the_rest(vault: Vault) -> None:
    from memd.daemon.handler import Handler

    class Clock:
        now = 1000.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    handler = Handler(vault, clock=clock, debounce=0.1, quiet=3.0, check_every=3600.0, rescan_every=3600.0)
    handler.ingest_step = 0.0  # one unit per step: the smallest bound there is
    handler.start()
    (vault.inbox_dir / "big.md").write_text("".join(f"- item {i} about bed {i % 97}\n" for i in range(300)))
    handler.notice(str(vault.inbox_dir / "big.md"))
    seen: list[tuple[int, int]] = []
    small_done_at: int | None = None
    for step in range(2000):
        clock.now += 0.2
        handler.run_due()
        progress = handler.book.data.get("ingesting")
        if progress:
            seen.append((progress["done"], progress["total"]))
        if step == 5:  # a small file arrives while the big one is under way
            (vault.inbox_dir / "small.md").write_text("The boiler is serviced in March.\n")
            handler.notice(str(vault.inbox_dir / "small.md"))
        if small_done_at is None and (vault.inbox_dir / "done" / "small.md").exists():
            small_done_at = step
        if (vault.inbox_dir / "done" / "big.md").exists():
            break
    assert (vault.inbox_dir / "done" / "big.md").exists()
    assert small_done_at is not None and small_done_at < step  # not starved by the big one
    assert len(seen) > 10 and seen[-1][1] == 300  # progress, step by step
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    texts = [e["text"] for e in entries(vault)]
    assert len(texts) == 301 and "The boiler is serviced in March." in texts


def test_an_assistant_saying_back_what_the_person_told_stays_in_the_source(
    memd: Memd, vault: Vault, tmp_path: Path
) -> None:
    chat = [
        {"role": "user", "content": "I take my coffee with oat milk, no sugar."},
        {"role": "assistant", "content": "Noted: you take your coffee with oat milk and no sugar."},
        {"role": "user", "content": "Is the Atlas cut-over on Friday?"},
        {"role": "assistant", "content": "Yes, the Atlas cut-over is on Friday."},  # an answer, not an echo
        {"role": "user", "content": "My flight to Kyoto is on 3 April."},
        {"role": "assistant", "content": "Your Kyoto flight is on 3 April; ryokans near Gion book out early."},
    ]
    result = ingest_chat(memd, tmp_path, chat)
    texts = [e["text"] for e in entries(vault)]
    assert not any(t.startswith("Assistant: Noted") for t in texts)
    assert "Assistant: Yes, the Atlas cut-over is on Friday." in texts
    assert any("ryokans near Gion" in t for t in texts)  # it added something of its own
    assert sum(t.startswith("User:") for t in texts) == 3  # what the person says is always filed
    assert "Noted: you take your coffee" in (vault.root / result["source"]).read_text()  # verbatim in sources/


def test_an_imported_turn_is_found_once_through_its_entry_and_small_talk_through_the_copy(
    memd: Memd, vault: Vault, tmp_path: Path
) -> None:
    chat = [
        {"role": "user", "content": "Our beagle Biscuit turned three in March."},
        {"role": "assistant", "content": "Happy birthday to Biscuit!"},
        {"role": "user", "content": "Thanks so much!"},
    ]
    ingest_chat(memd, tmp_path, chat)
    memd("consolidate")

    def found(query: str) -> list[str]:
        return [hit["path"] for hit in json.loads(memd("search", query, "--json").output)]

    # The turn is an entry in a topic, and its copy in sources/ is not a second result.
    hits = found("beagle Biscuit")
    assert any(p.startswith("topics/") for p in hits)
    assert not any(p.startswith("sources/") for p in hits), hits
    # A turn that made no entry (thanks) is found in the copy, where it stays.
    assert any(p.startswith("sources/") for p in found("thanks so much"))
    # An entry deleted by hand gives its turn back to the copy's records.
    for topic in vault.topics_dir.glob("*.md"):
        text = topic.read_text()
        topic.write_text("\n".join(line for line in text.split("\n") if "beagle" not in line))
    assert any(p.startswith("sources/") for p in found("beagle Biscuit"))
