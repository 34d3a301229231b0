"""`memd status` counts a large buffer without parsing it whole: what was
counted is kept with the hash of the bytes counted, and only what was appended
since is parsed (memd/vault/buffer_status.py)."""

from __future__ import annotations

import json
import time

from memd.core.document import parse_document
from memd.core.tokens import count_tokens
from memd.vault.buffer_status import buffer_status
from memd.vault.vault import Vault

from .conftest import Memd

ENTRIES = 36_000


def buffered(memd: Memd) -> dict[str, int]:
    return json.loads(memd("status", "--json").output)["buffer"]


def parsed(vault: Vault) -> tuple[int, int]:
    """What parsing the whole buffer finds: (entries, tokens)."""
    entries = parse_document(vault.current.read_text(encoding="utf-8")).entries()
    return len(entries), sum(count_tokens(e.entry.full_text) for e in entries)


def fill(vault: Vault, count: int) -> None:
    lines = [
        f"- <seq={n},time=2026-11-20T09:12:00Z,source=user> Dana mentioned the atlas milestone {n % 97} today"
        for n in range(1, count + 1)
    ]
    with vault.current.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    state = json.loads(vault.state_path.read_text())
    vault.state_path.write_text(json.dumps({**state, "next_seq": count + 1}))


def test_a_status_after_an_add_to_a_large_buffer_parses_only_the_new_entry(memd: Memd) -> None:
    fill(memd.vault, ENTRIES)
    first = buffered(memd)  # counts the whole buffer once, and keeps the count
    assert (first["entries"], first["tokens"]) == parsed(memd.vault)
    memd("add", "Dana takes her coffee with oat milk")

    started = time.process_time()
    status = buffer_status(memd.vault)
    spent = time.process_time() - started

    assert spent <= 0.3, f"{spent:.2f} s CPU to count {ENTRIES} buffered entries"
    assert (status.entries, status.tokens) == parsed(memd.vault) == (ENTRIES + 1, first["tokens"] + 7)


def test_an_edit_anywhere_but_the_end_counts_the_buffer_again(memd: Memd) -> None:
    memd("add", "one two three")
    memd("add", "four five six")
    assert buffered(memd)["entries"] == 2
    text = memd.vault.current.read_text()
    memd.vault.current.write_text(text.replace("one two three", "one two three seven eight"))
    memd("add", "nine")
    assert (buffered(memd)["entries"], buffered(memd)["tokens"]) == parsed(memd.vault) == (3, 9)


def test_lines_added_under_the_last_entry_are_that_entrys_words(memd: Memd) -> None:
    memd("add", "one two three")
    assert buffered(memd)["tokens"] == 3
    with memd.vault.current.open("a", encoding="utf-8") as out:
        out.write("  four five\n")  # a continuation of the entry above, by hand
    assert (buffered(memd)["entries"], buffered(memd)["tokens"]) == parsed(memd.vault) == (1, 5)
    with memd.vault.current.open("a", encoding="utf-8") as out:
        out.write("```\n- not an entry\n```\n- six\n")  # a fence: the whole file decides
    assert (buffered(memd)["entries"], buffered(memd)["tokens"]) == parsed(memd.vault) == (2, 6)
