"""`memd forget` takes the words out of the source copy too, so a search no longer
finds them; `memd forget --source PATH` takes back a whole import, which can be
imported again later."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memd.vault.vault import Vault

from .conftest import Memd
from .exports import chatgpt


def chat(tmp_path: Path) -> Path:
    """A ChatGPT export of one conversation: two facts from the person, one reply."""
    turns = [("user", "My sister Ana moved to Lisbon last spring."), ("user", "I keep bees on the roof of the garage.")]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt({"family": turns}, {"family": "family"})))
    return path


def note(tmp_path: Path) -> Path:
    path = tmp_path / "garden.md"
    path.write_text(
        "# Garden\n\nThe fig tree was planted in April by the south wall.\n\nWe water the basil on Sundays.\n"
    )
    return path


def seq_of(vault: Vault, words: str) -> str:
    for path in vault.entry_files():
        for line in path.read_text().splitlines():
            if words in line and line.startswith("- <seq="):
                return line.split("<seq=", 1)[1].split(",", 1)[0]
    raise AssertionError(f"no entry says {words!r}")


def copies(vault: Vault) -> str:
    return "".join(p.read_text() for p in sorted(vault.sources_dir.rglob("*.md")))


@pytest.mark.parametrize("consolidated", [False, True], ids=["in-the-buffer", "in-a-topic"])
def test_forget_takes_the_words_out_of_the_source_copy(
    memd: Memd, vault: Vault, tmp_path: Path, consolidated: bool
) -> None:
    memd("ingest", str(chat(tmp_path)), str(note(tmp_path)))
    if consolidated:
        memd("consolidate")
    assert "Lisbon" in memd("search", "Lisbon").output
    memd("forget", seq_of(vault, "Lisbon"))
    memd("forget", seq_of(vault, "fig tree"))
    held = copies(vault)
    assert "Lisbon" not in held and "fig tree" not in held and held.count("[forgotten]") == 2
    assert "bees on the roof" in held and "basil" in held  # what was not forgotten stays
    assert "^t1" in held and "^t2" in held  # every other reference still opens where it did
    assert "Lisbon" not in memd("search", "Lisbon").output
    assert "fig" not in memd("search", "fig tree south wall").output
    assert "bees" in memd("search", "bees roof").output
    assert memd("verify").output.startswith("ok:")
    committed = subprocess.run(
        ["git", "-C", str(vault.root), "show", "HEAD", "--stat", "--format=%an %s"], capture_output=True, text=True
    ).stdout
    assert "Test User forget: seq" in committed and "sources/" in committed


@pytest.mark.parametrize("by", ["the imported file", "the copy's path"])
def test_forget_source_takes_back_a_whole_import_which_can_be_made_again(
    memd: Memd, vault: Vault, tmp_path: Path, by: str
) -> None:
    garden = note(tmp_path)
    memd("ingest", str(chat(tmp_path)))
    memd("ingest", str(garden))
    memd("consolidate")
    [copy] = [p for p in vault.sources_dir.rglob("garden*.md")]
    given = str(garden) if by == "the imported file" else vault.rel_of(copy)
    out = memd("forget", "--source", given).output
    assert "forgot" in out and "fig tree" in out
    assert not copy.exists()
    words = "".join(p.read_text() for p in vault.entry_files())
    assert "fig tree" not in words and "basil" not in words and "Lisbon" in words  # the other import stays
    assert "fig" not in memd("search", "fig tree").output
    assert memd("verify").output.startswith("ok:")
    # Imported again, as new.
    again = memd("ingest", str(garden)).output
    assert "+2 entries" in again
    assert "fig tree" in "".join(p.read_text() for p in vault.entry_files())
    memd("consolidate")
    assert memd("verify").output.startswith("ok:")


def test_forget_source_names_what_it_cannot_find(memd: Memd, tmp_path: Path) -> None:
    result = memd("forget", "--source", str(tmp_path / "never-imported.md"), ok=False)
    assert result.exit_code == 1 and "no source copy under sources/ was imported from it" in result.output
    refused = memd("forget", ok=False)
    assert refused.exit_code == 1 and "give SEQS or --source PATH" in refused.output


@pytest.mark.slow  # an MCP server in a subprocess
def test_forgotten_words_are_found_by_no_search_ask_or_mcp_tool(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    from .test_mcp import call, with_session

    memd("ingest", str(chat(tmp_path)), str(note(tmp_path)))
    memd("add", "Bart gave me rhubarb from his garden")
    memd("consolidate")
    memd("forget", seq_of(vault, "rhubarb"))
    memd("forget", "--source", str(note(tmp_path)))
    for words, said in (("rhubarb", "gave me rhubarb"), ("fig tree", "fig tree")):
        assert words.split()[0] not in memd("search", words).output
        answer = json.loads(memd("ask", f"what about the {words}?", "--json").output)
        answer.pop("question", None)  # the question says the words; nothing memd answers with does
        assert said not in json.dumps(answer)
    seen: dict[str, object] = {}

    async def body(session: object) -> None:
        seen["rhubarb"] = await call(session, "memory_search", query="rhubarb garden")  # type: ignore[arg-type]
        seen["fig"] = await call(session, "memory_search", query="fig tree")  # type: ignore[arg-type]

    with_session(vault, body)  # type: ignore[arg-type]
    found = {key: json.dumps(result["results"]) for key, result in seen.items()}  # type: ignore[index]
    assert "rhubarb" not in found["rhubarb"] and "fig" not in found["fig"]
    assert memd("verify").output.startswith("ok:")
