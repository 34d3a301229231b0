"""`memd ingest`: formats, verbatim sources, entries with provenance, re-ingest."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memd.ingest import Rejected, ingest_file
from memd.vault.vault import Vault

from .conftest import Memd

NOTE = """\
---
tags: [travel]
---
# Kyoto trip

Booked the night train to Kyoto for 12 March. The ryokan is near Gion.
Thanks!

- Buy a Japan rail pass before leaving
- [ ] Ask Ana about the tea ceremony

```sh
echo not a memory
```
"""

CHAT_MESSAGES = [
    {"role": "user", "content": "We moved the standup to 9:30 on Tuesdays.", "time": "2026-11-20T09:00:00Z"},
    {
        "role": "assistant",
        "content": "Noted, standup is at 9:30 on Tuesdays now.",
        "time": datetime(2026, 11, 20, 9, 1, tzinfo=UTC).timestamp(),  # epoch seconds
    },
    {"role": "user", "content": "thanks!", "time": "2026-11-20T09:02:00Z"},
]

CLAUDE_LINES = [
    {"type": "summary", "summary": "Uploader retries"},
    {
        "type": "user",
        "message": {"role": "user", "content": "Please add retry logic to the uploader"},
        "timestamp": "2026-11-20T10:00:00.000Z",
    },
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "backoff is best"},
                {"type": "text", "text": "I added exponential backoff to upload()."},
                {"type": "tool_use", "name": "Edit", "input": {}},
            ],
        },
        "timestamp": "2026-11-20T10:00:05Z",
    },
    {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}},
]


def _node(role: str, text: str, parent: str | None, children: list[str], when: float) -> dict[str, Any]:
    message = {"author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, "create_time": when}
    return {"message": message, "parent": parent, "children": children}


CHATGPT = [
    {
        "title": "Trip planning",
        "current_node": "c",
        "mapping": {
            "root": {"message": None, "parent": None, "children": ["a"]},
            "a": _node("user", "We fly to Lisbon on 3 May.", "root", ["x", "b"], 1700000000.0),
            "x": _node("assistant", "An abandoned answer about Porto.", "a", [], 1700000030.0),
            "b": _node("assistant", "Noted: the Lisbon trip starts on 3 May.", "a", ["c"], 1700000060.0),
            "c": _node("user", "Book a window seat for the Lisbon flight.", "b", [], 1700000120.0),
        },
    }
]


def write(path: Path, content: str | bytes | list[Any] | dict[str, Any], jsonl: bool = False) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    elif jsonl:
        path.write_text("".join(json.dumps(line) + "\n" for line in content))
    else:
        path.write_text(json.dumps(content))
    return path


def entries(vault: Vault) -> list[dict[str, Any]]:
    from memd.core.document import entry_json

    return [entry_json(e) for e in vault.read(vault.current).signed()]


def source_line(vault: Vault, src: str) -> str:
    """The line of the source copy a ``src`` reference points at."""
    from memd.ingest.sources import locate

    found = locate(vault, src)
    assert found is not None, src
    rel, line = found
    return (vault.root / rel).read_text().splitlines()[line - 1]


def test_a_note_is_kept_verbatim_and_split_into_statements(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    result = json.loads(memd("ingest", str(write(tmp_path / "kyoto.md", NOTE)), "--json").output)[0]
    assert result["format"] == "note"
    assert re.fullmatch(r"sources/\d{4}/\d{2}/kyoto\.md", result["source"])
    copy = (vault.root / result["source"]).read_text()
    assert copy.startswith('---\noriginal: "kyoto.md"\nsha256: ')
    assert "Booked the night train to Kyoto for 12 March. The ryokan is near Gion." in copy
    assert "```yaml\ntags: [travel]\n```" in copy  # the note's own frontmatter, same height
    texts = [e["text"] for e in entries(vault)]
    assert texts == [
        "Booked the night train to Kyoto for 12 March.",
        "The ryokan is near Gion.",
        "Buy a Japan rail pass before leaving",
        "Ask Ana about the tea ceremony",
    ]
    for entry in entries(vault):
        assert entry["source"] == "import:note"
        assert entry["text"] in source_line(vault, entry["src"])


@pytest.mark.parametrize(
    ("name", "content", "jsonl", "fmt", "expected"),
    [
        ("chat.json", CHAT_MESSAGES, False, "chat", ["User: We moved the standup", "Assistant: Noted, standup"]),
        ("chat.json", {"messages": CHAT_MESSAGES}, False, "chat", ["User: We moved", "Assistant: Noted"]),
        ("chat.jsonl", CHAT_MESSAGES, True, "chat", ["User: We moved", "Assistant: Noted"]),
        ("session.jsonl", CLAUDE_LINES, True, "claude-code", ["User: Please add retry", "Assistant: I added"]),
        ("conversations.json", CHATGPT, False, "chatgpt", ["User: We fly", "Assistant: Noted: the", "User: Book"]),
    ],
    ids=["json-list", "json-messages", "jsonl", "claude-code", "chatgpt"],
)
def test_transcripts_become_one_entry_per_informative_turn(
    memd: Memd, vault: Vault, tmp_path: Path, name: str, content: Any, jsonl: bool, fmt: str, expected: list[str]
) -> None:
    result = json.loads(memd("ingest", str(write(tmp_path / name, content, jsonl)), "--json").output)[0]
    assert result["format"] == fmt
    found = entries(vault)
    assert len(found) == len(expected)  # filler ("thanks!"), tool calls and abandoned branches give none
    for entry, start in zip(found, expected, strict=True):
        assert entry["text"].startswith(start)
        assert entry["source"] == f"import:{fmt}"
        assert re.fullmatch(r"sources/\d{4}/\d{2}/[a-z-]+\.md#\^t\d+", entry["src"])  # an Obsidian block id
        speaker, _, said = entry["text"].partition(": ")
        line = source_line(vault, entry["src"])
        assert f"**{speaker}**" in line and said in line
    copy = (vault.root / result["source"]).read_text()
    assert "Porto" not in copy and "backoff is best" not in copy


def test_turn_times_are_normalised(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    memd("ingest", str(write(tmp_path / "chat.json", CHAT_MESSAGES)))
    times = [e["time"] for e in entries(vault)]
    assert times == ["2026-11-20T09:00:00Z", "2026-11-20T09:01:00Z"]  # ISO kept, epoch seconds converted


def test_reingesting_the_same_file_changes_nothing(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    note = write(tmp_path / "kyoto.md", NOTE)
    memd("ingest", str(note))
    before = vault.current.read_text()
    log_before = _git(vault, "log", "--format=%s")
    renamed = write(tmp_path / "copy-of-kyoto.md", NOTE)  # same bytes, other name
    result = memd("ingest", str(note), str(renamed))
    assert result.output.count("already ingested") == 2
    assert vault.current.read_text() == before
    assert _git(vault, "log", "--format=%s") == log_before
    assert len(list(vault.sources_dir.rglob("*.md"))) == 1


def test_sources_are_committed_by_memd_at_once(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    memd("ingest", str(write(tmp_path / "chat.json", CHAT_MESSAGES)))
    subject, author = _git(vault, "log", "-1", "--format=%s|%an").strip().split("|")
    assert subject.startswith("ingest: chat.json -> sources/")
    assert author == "memd"
    assert _git(vault, "status", "--porcelain", "--", "sources") == ""


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("photo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary file"),
        ("report.pdf", b"%PDF-1.7 text", "unknown format '.pdf'"),
        ("latin1.txt", "caf\u00e9".encode("latin-1"), "not valid UTF-8 (byte 0xe9 at offset 3)"),
        ("broken.json", b'[{"role": "user", "content": "hi"', "malformed JSON"),
        ("broken.jsonl", b'{"role": "user", "content": "hi"}\n{oops}\n{"role": "user"}\n', "malformed JSON on line 2"),
        ("shape.json", b'{"weather": "sunny"}', "unknown JSON format"),
        ("empty.txt", b"  \n", "empty file"),
    ],
)
def test_unusable_files_are_rejected_with_a_reason(
    memd: Memd, vault: Vault, tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    before = vault.current.read_text()
    result = memd("ingest", str(write(tmp_path / name, content)), ok=False)
    assert result.exit_code == 1
    assert f"rejected: {reason}" in result.output
    assert vault.current.read_text() == before
    assert list(vault.sources_dir.rglob("*.md")) == []


def test_files_over_the_size_limit_are_rejected(vault: Vault, tmp_path: Path) -> None:
    big = write(tmp_path / "big.txt", "word " * 300_000)
    with pytest.raises(Rejected, match=r"too large \(1\.4 MB; the limit is 1\.0 MB: `memd ingest --max-size MB`"):
        ingest_file(vault, big, max_bytes=1024 * 1024)


def test_progress_is_reported_for_transcripts(vault: Vault, tmp_path: Path) -> None:
    messages = [{"role": "user", "content": f"Fact number {i} about the garden beds."} for i in range(120)]
    calls: list[tuple[int, int]] = []
    path = write(tmp_path / "long.json", messages)
    ingest_file(vault, path, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (120, 120)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def _git(vault: Vault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True, check=True).stdout


def test_an_import_stopped_half_way_resumes_where_it_stopped(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memd.ingest.pipeline as pipeline

    monkeypatch.setattr(pipeline, "APPEND_BATCH", 100)
    note = tmp_path / "garden.md"
    note.write_text("".join(f"- Bed {n} got tomatoes and basil on day {n}.\n" for n in range(1, 1001)))
    stopped = pipeline.IngestJob.open(vault, note)
    while stopped.entries < 300:  # Ctrl-C after some batches were appended, before the copy was written
        assert not stopped.step(seconds=0)
    assert not (vault.root / stopped.rel).exists()

    result = ingest_file(vault, note)
    # The rerun appended only the rest, linked to the copy the first run's entries name.
    assert result.source == stopped.rel and (vault.root / stopped.rel).is_file()
    assert result.entries == 1000 - stopped.entries
    assert any("resumed an import stopped before it finished" in w for w in result.warnings)
    buffered = [
        located.entry.text for located in vault.read(vault.current).signed() if "tomatoes" in located.entry.text
    ]
    assert len(buffered) == len(set(buffered)) == 1000
    assert not list((vault.meta_dir / "reserved").iterdir())
    assert ingest_file(vault, note).duplicate  # and once more: already imported
