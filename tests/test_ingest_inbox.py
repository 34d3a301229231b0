"""The inbox: ingest, move to done/ or rejected/ with a reason; secrets stay out of git;
LoCoMo conversation 1 end to end."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from memd.consolidation.run import consolidate
from memd.ingest import process_inbox
from memd.vault.vault import Vault

from .conftest import REPO, Memd

LOCOMO = REPO.parent / "shared" / "data" / "locomo-dev.json"
SECRET = "sk-ant-api03-" + "Qw7Er9Ty2Ui4Op6As8Df0Gh"  # built here so no file in the repo holds it whole


def drop(vault: Vault, name: str, content: str | bytes) -> Path:
    path = vault.inbox_dir / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_inbox_files_are_ingested_or_rejected_with_a_reason(vault: Vault) -> None:
    drop(vault, "standup.md", "The standup moved to 9:30 on Tuesdays.\n")
    drop(vault, "photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF")
    drop(vault, "broken.json", '[{"role": "user"')
    drop(vault, ".standup.md.swp", b"b0VIM 8.2\x00")  # an editor's swap file: not ours to touch

    outcomes = {o.name: o for o in process_inbox(vault)}

    assert set(outcomes) == {"standup.md", "photo.jpg", "broken.json"}
    assert outcomes["standup.md"].status == "ingested"
    assert (vault.inbox_dir / "done" / "standup.md").is_file()
    assert "The standup moved to 9:30 on Tuesdays." in vault.current.read_text()
    for name, reason in (("photo.jpg", "binary file"), ("broken.json", "malformed JSON")):
        assert outcomes[name].status == "rejected"
        assert (vault.inbox_dir / "rejected" / name).is_file()
        assert (vault.inbox_dir / "rejected" / f"{name}.reason.txt").read_text().startswith(reason)
    assert (vault.inbox_dir / ".standup.md.swp").exists()
    assert sorted(p.name for p in vault.inbox_dir.iterdir() if p.is_file()) == [".gitkeep", ".standup.md.swp"]


def test_a_file_seen_before_goes_to_done_without_new_entries(vault: Vault) -> None:
    drop(vault, "standup.md", "The standup moved to 9:30 on Tuesdays.\n")
    process_inbox(vault)
    before = vault.current.read_text()
    drop(vault, "standup.md", "The standup moved to 9:30 on Tuesdays.\n")
    [outcome] = process_inbox(vault)
    assert outcome.status == "duplicate"
    assert outcome.moved_to == "inbox/done/standup-2.md"
    assert vault.current.read_text() == before


def test_a_key_in_an_ingested_transcript_never_reaches_any_git_object(memd: Memd, vault: Vault) -> None:
    chat = [
        {"role": "user", "content": f"My Anthropic key is {SECRET} for the staging box."},
        {"role": "assistant", "content": f"Stored. Use it as x-api-key: {SECRET} in the header."},
        {"role": "user", "content": "Also the database password=Sup3rS3cret! lives in the vault server."},
    ]
    drop(vault, "chat.json", json.dumps(chat))
    process_inbox(vault)
    memd("add", f"remember {SECRET} too")  # the CLI path redacts as well
    consolidate(vault)

    objects = subprocess.run(
        ["git", "-C", str(vault.root), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    ).stdout
    assert b"[REDACTED:anthropic-key]" in objects  # the content did reach git...
    assert SECRET.encode() not in objects  # ...but never the key
    assert b"Sup3rS3cret!" not in objects
    for path in [vault.current, *vault.topic_files(), *vault.sources_dir.rglob("*.md")]:
        assert SECRET not in path.read_text()
    assert "possible secret" not in memd("lint").output


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev slice not available")
def test_locomo_conversation_1_through_the_inbox(memd: Memd, vault: Vault) -> None:
    conversation = json.loads(LOCOMO.read_text())[0]
    drop(vault, "locomo-conv-1.json", json.dumps([conversation]))
    dia_ids = [t["dia_id"] for n in range(1, 40) for t in conversation["conversation"].get(f"session_{n}", [])]

    [outcome] = process_inbox(vault)

    assert outcome.status == "ingested" and outcome.result is not None
    source = (vault.root / outcome.result.source).read_text()
    assert outcome.result.turns == len(dia_ids)
    assert len(re.findall(r" \^t\d+$", source, re.MULTILINE)) == len(dia_ids)  # one block id per turn
    assert "## Session 1\n" in source
    current = vault.read(vault.current).signed()
    srcs = [e.entry.signature.src or "" for e in current if e.entry.signature]
    assert len(srcs) == outcome.result.entries > 0
    assert {src.split(";")[0] for src in srcs} <= set(dia_ids)
    assert all(src.split(";")[1].startswith(outcome.result.source + "#^t") for src in srcs)

    result = consolidate(vault)
    assert result.entries == len(srcs)
    assert vault.topic_files()
    assert memd("verify").output.startswith("ok:")
    assert memd("lint").exit_code == 0
