"""Keeping a memory in order from the Python API: one entry by seq
(``Memory.get``), a fact replaced (``Memory.update``) and what consolidation
then records, and topics read whole (``Memory.topic``, ``Memory.topics``)."""

from __future__ import annotations

import json

import pytest

from memd import Memory
from memd.consolidation.supersessions import encode_reason, reason_of
from memd.core.document import parse_document
from memd.core.errors import FormatError, MemdError, NotFound, VaultError
from memd.core.signature import Signature
from memd.vault import acks
from memd.vault.vault import Vault

from .conftest import Memd


def update_log(vault: Vault) -> list[str]:
    lines = []
    for path in vault.topic_files():
        front = parse_document(path.read_text()).frontmatter
        lines += [str(line) for line in (front.data.get("update_log") or [])] if front else []
    return lines


def live_texts(vault: Vault) -> dict[str, str]:
    """Live entries of the buffer and topics: seq value -> text."""
    found = {}
    for path in [vault.current, *vault.topic_files()]:
        for e in parse_document(path.read_text()).signed():
            found[str(e.entry.signature.seq)] = e.entry.full_text  # type: ignore[union-attr]
    return found


def test_an_update_supersedes_a_filed_fact_once_consolidated(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [old] = memory.add("Dana lives in Lisbon, near the river.").added
    memory.add("The bike is a green Brompton.")
    memory.consolidate()

    found = memory.get(str(old.seq))
    shown = found.to_json()
    assert shown["text"] == "Dana lives in Lisbon, near the river."
    assert shown["path"].startswith("topics/") and shown["topic"] == shown["path"][len("topics/") : -len(".md")]
    assert shown["cite"] == f"{shown['path']}:{shown['line']}"
    assert shown["signature"].startswith(f"<seq={old.seq},") and shown["source"] == "user"
    home = shown["path"]

    updated = memory.update(str(old.seq), "Dana lives in Porto.", reason="she moved, 50% for the job")
    new = updated.added
    assert new.path == "CURRENT.md"
    assert f",supersedes={old.seq},reason=she%20moved%2C%2050%%20for%20the%20job" in new.signature
    assert updated.to_json()["supersedes"]["text"] == "Dana lives in Lisbon, near the river."
    assert new.seq in acks.pending(vault)  # acknowledged like any add
    # Until the next consolidation the old entry is live, and says what will replace it.
    assert memory.get(str(old.seq)).to_json()["replaced_by"] == [
        {"seq": str(new.seq), "path": "CURRENT.md", "line": new.line}
    ]

    memd("consolidate")
    assert str(old.seq) not in live_texts(vault)
    assert live_texts(vault)[str(new.seq)] == "Dana lives in Porto."
    assert f"seq {new.seq} supersedes seq {old.seq} (she moved, 50% for the job)" in " ".join(update_log(vault))
    # The update went where the fact it replaces was.
    assert memory.get(str(new.seq)).path == home
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["superseded"] == 1, report
    life = memory.history(str(old.seq)).to_json()
    assert life["steps"][-1]["kind"] == "superseded" and life["now"] == []
    with pytest.raises(NotFound, match="superseded or forgotten") as gone:
        memory.get(str(old.seq))
    assert f"memory_history with target {old.seq}" in gone.value.for_door("mcp")


def test_an_update_of_an_entry_still_in_the_buffer(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [old] = memory.add("The Atlas launch is on 3 March.").added
    [new] = [memory.update(str(old.seq), "The Atlas launch is on 17 March.", reason="slipped two weeks").added]
    assert memory.get(str(old.seq)).path == "CURRENT.md"
    memd("consolidate")
    assert set(live_texts(vault)) == {str(new.seq)}
    assert f"seq {new.seq} supersedes seq {old.seq} (slipped two weeks)" in " ".join(update_log(vault))
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_an_update_names_every_seq_of_a_merged_entry(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    memory.add("Sam prefers the window seat.")
    memory.add("Sam prefers the window seat.")
    memd("consolidate")
    [merged] = [seq for seq in live_texts(vault) if "+" in seq or "-" in seq]
    first = merged.replace("-", "+").split("+")[0]
    assert memory.get(first).seq == merged
    updated = memory.update(first, "Sam prefers the aisle seat now.", reason="long legs")
    assert f",supersedes={merged}," in updated.added.signature
    memd("consolidate")
    assert merged not in live_texts(vault)
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_what_an_update_refuses(vault: Vault) -> None:
    memory = Memory.open(vault.root)
    [fact] = memory.add("Dana's dentist is Dr Okafor.").added
    (vault.root / "people.md").write_text("# People\n\n- <seq=900> Priya leads the Atlas team.\n")
    before = vault.current.read_text()
    with pytest.raises(FormatError, match="give a reason"):
        memory.update(str(fact.seq), "Dana's dentist is Dr Lee.", reason="  ")
    with pytest.raises(FormatError, match="meta cannot set supersedes"):
        memory.update(str(fact.seq), "x", reason="r", meta=(("supersedes", "1"),))
    with pytest.raises(NotFound, match="no live entry holds seq 77"):
        memory.update("77", "x", reason="r")
    with pytest.raises(VaultError, match=r"people\.md:3: seq 900 is in a note of yours"):
        memory.update("900", "Priya leads Borealis.", reason="moved team")
    with pytest.raises(FormatError, match="invalid seq"):
        memory.get("twelve")
    assert vault.current.read_text() == before  # nothing was appended by a refused update
    [new] = [memory.update(str(fact.seq), "Dana's dentist is Dr Lee.", reason="Okafor retired").added]
    with pytest.raises(VaultError, match=rf"already being replaced by seq {new.seq} .*update seq {new.seq} instead"):
        memory.update(str(fact.seq), "Dana's dentist is Dr Chen.", reason="again")


def test_a_mark_naming_nothing_live_changes_nothing(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [fact] = memory.add("Kai plays the cello.").added
    memd("forget", str(fact.seq))
    memd("add", "--meta", f"supersedes={fact.seq}", "Kai plays the viola.")
    memd("consolidate")
    assert list(live_texts(vault).values()) == ["Kai plays the viola."]
    assert not any("supersedes seq" in line for line in update_log(vault))
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_a_reason_survives_its_trip_through_a_signature() -> None:
    for reason in [
        "she moved",
        "50% off, = a deal > none",
        "%20 and %25 literally, 100%",
        "% %2 %%20",
        "ünïcode and\ttabs",
    ]:
        value = encode_reason(reason)
        assert " " not in value and "\t" not in value
        signature = Signature.parse(Signature.make(1, extra=[("reason", value)]).render())
        assert reason_of(signature) == " ".join(reason.split())


def test_topics_are_read_whole_and_listed_with_summaries(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    memory.add(["Dana takes her coffee with oat milk.", "The Kyoto trip starts on 4 April."])
    memd("consolidate")
    listed = memory.topics().to_json()
    ids = sorted(p.relative_to(vault.root / "topics").with_suffix("").as_posix() for p in vault.topic_files())
    assert listed["total"] == len(ids) and [t["id"] for t in listed["topics"]] == ids
    assert all(t["summary"] for t in listed["topics"])
    assert [t["id"] for t in memory.topics(offset=1, limit=5).to_json()["topics"]] == ids[1:]
    topic = memory.topic(ids[0])
    assert topic.markdown == (vault.root / topic.path).read_text()
    assert topic.summary == listed["topics"][0]["summary"]
    for wrong in ["no-such-topic", "../CURRENT", "../.memd/config", "/etc/passwd", ""]:
        with pytest.raises(MemdError, match="no topic"):
            memory.topic(wrong)


def test_an_undone_consolidation_gives_the_update_back_with_its_mark(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [old] = memory.add("Dana lives in Lisbon, near the river.").added
    memd("consolidate")
    new = memory.update(str(old.seq), "Dana lives in Porto.", reason="she moved").added
    memd("consolidate")
    memd("undo")
    # As before the consolidation: the old fact filed, the update waiting with its mark.
    assert memory.get(str(old.seq)).path.startswith("topics/")
    back = memory.get(str(new.seq))
    assert back.path == "CURRENT.md" and back.signature.get("supersedes") == str(old.seq)
    memd("consolidate")
    assert set(live_texts(vault)) == {str(new.seq)}
    assert json.loads(memd("verify", "--json").output)["ok"]


def test_an_update_of_an_update_keeps_every_step_on_record(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [first] = memory.add("The Atlas launch is on 3 March.").added
    memory.add("Kai plays the cello.")
    memd("consolidate")
    home = memory.get(str(first.seq)).path
    second = memory.update(str(first.seq), "The Atlas launch is on 17 March.", reason="slipped").added
    third = memory.update(str(second.seq), "The Atlas launch is on 2 April.", reason="slipped again").added
    memd("consolidate")
    log = " ".join(update_log(vault))
    assert f"seq {second.seq} supersedes seq {first.seq} (slipped)" in log
    assert f"seq {third.seq} supersedes seq {second.seq} (slipped again)" in log
    assert memory.get(str(third.seq)).path == home
    assert {str(first.seq), str(second.seq)}.isdisjoint(live_texts(vault))
    assert json.loads(memd("verify", "--json").output)["superseded"] == 2


def test_a_broken_note_does_not_hide_other_entries(vault: Vault) -> None:
    memory = Memory.open(vault.root)
    [fact] = memory.add("Kai plays the cello.").added
    (vault.root / "broken.md").write_bytes(b"- <seq=5> caf\xe9 in Latin-1\n")
    assert memory.get(str(fact.seq)).to_json()["text"] == "Kai plays the cello."
    with pytest.raises(NotFound, match=r"broken\.md could not be read"):
        memory.get("5")
