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
