"""`memd.Memory`'s verbs return typed results with `to_json()`, as the README promises."""

from __future__ import annotations

import json

from memd import Memory
from memd.app.results import AddResult
from memd.vault.vault import Vault


def test_add_returns_a_typed_result_with_to_json(vault: Vault, memd) -> None:  # type: ignore[no-untyped-def]
    memory = Memory.open(vault.root)
    result = memory.add(["Dana takes her coffee with oat milk", "  ", "Allergic to peanuts"], source="user")
    assert isinstance(result, AddResult)
    assert result.seqs == (1, 2)  # the blank piece is no entry
    first = result.added[0]
    assert (first.path, first.text) == ("CURRENT.md", "Dana takes her coffee with oat milk")
    assert vault.current.read_text().splitlines()[first.line - 1].endswith(first.text)
    data = result.to_json()
    assert data == {"added": [item.to_json() for item in result.added]}
    assert data["added"][1]["signature"].startswith("<seq=2,") and "source=user" in data["added"][1]["signature"]
    json.dumps(data)  # plain JSON all the way down
    # The CLI's --json lists the same entries.
    [third] = json.loads(memd("add", "Sam prefers green tea", "--json").output)
    assert third["seq"] == 3 and set(third) == set(data["added"][0])


def test_what_the_daemon_and_the_cli_ask_is_a_verb_of_memory(vault: Vault, memd) -> None:  # type: ignore[no-untyped-def]
    memory = Memory.open(vault.root)
    memory.add("Dana takes her coffee with oat milk")
    # `memd show --json` and `memory.show()` are one answer.
    shown = memory.show()
    assert shown.path == "CURRENT.md" and shown.text == vault.current.read_text()
    assert json.loads(memd("show", "--json").output) == shown.to_json()
    assert shown.to_json()["entries"][0]["text"] == "Dana takes her coffee with oat milk"
    # `memd config set` and `memory.set_setting()` write the same line.
    changed = memory.set_setting("consolidate.buffer_tokens", "3000")
    assert (changed.key, changed.before, changed.after) == ("consolidate.buffer_tokens", "5000", "3000")
    assert changed.where.startswith(".memd/config.toml:")
    assert memory.setting("consolidate.buffer_tokens").value == 3000
    assert memd("config", "get", "consolidate.buffer_tokens").output.strip() == "3000"
    # What the daemon watches: changed files, possible secrets, the inbox, a commit's files.
    (vault.root / "topics" / "keys.md").write_text("# Keys\n\n- aws key AKIAIOSFODNN7EXAMPLE\n")
    assert "topics/keys.md" in memory.changed_paths()
    assert list(memory.possible_secrets()) == ["topics/keys.md"]
    (vault.root / "inbox" / "notes.md").write_text("Sam likes green tea\n")
    assert [p.name for p in memory.inbox_files()] == ["notes.md"]
    (vault.root / "topics" / "keys.md").unlink()
    (vault.root / "topics" / "tea.md").write_text("# Tea\n\n- Sam likes green tea\n")
    sha = memory.commit_hand_edits()
    assert sha is not None and memory.files_of_commit(sha) == (".memd/config.toml", "topics/tea.md")
