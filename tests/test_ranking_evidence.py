"""What a reader sees first is what matched: the exact entry ranks first
through every door (API, CLI, MCP), and a neighbour or reply that holds none
of the query's words only follows the hit it belongs to."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memd import Memory
from memd.index.records import Record
from memd.index.retrieve import Result
from memd.index.signals import evidence_first
from memd.mcp.server import build_server
from memd.vault.vault import Vault

ENTRIES = [
    "Takes coffee with oat milk",
    "Allergic to peanuts",
    "Dana takes her coffee with oat milk",
    "Dana booked a window seat for the flight to Kyoto",
    "Pack the rain jacket for Kyoto",
    "Dana's dentist appointment is on 3 December",
    "Sam prefers green tea in the morning",
]


@pytest.fixture
def memory(vault: Vault) -> Memory:
    # One `memd add` each, the way the README's first steps fill a vault.
    memory = Memory.open(vault.root)
    for text in ENTRIES:
        memory.add(text)
    return memory


def matching(results: list[dict[str, Any]], words: tuple[str, ...]) -> list[bool]:
    return [all(word in r["text"].lower() for word in words) for r in results]


def assert_evidence_first(results: list[dict[str, Any]], words: tuple[str, ...]) -> None:
    """No result holding the query's words sits below a neighbour that holds none, or below a weaker guess."""
    held = matching(results, words)
    for i, result in enumerate(results):
        if not held[i]:
            continue
        above = results[:i]
        assert all(r["via"] != "neighbour" or matching([r], words)[0] for r in above), results
        assert all(r["via"] != "meaning" or r["score"] >= result["score"] for r in above), results
    assert all(r["score"] > 0 for r in results), results


def test_the_exact_entries_come_before_a_meaning_guess_and_the_neighbours(memory: Memory) -> None:
    found = list(memory.search("oat milk", limit=5).results)
    assert [r["text"] for r in found[:2]] == ["Takes coffee with oat milk", "Dana takes her coffee with oat milk"]
    assert_evidence_first(found, ("oat", "milk"))
    # A neighbour shown follows the hit it sits next to.
    for i, r in enumerate(found):
        if r["via"] == "neighbour":
            seqs = {int(r["seq"]) - 1, int(r["seq"]) + 1}
            assert any(int(other["seq"]) in seqs for other in found[:i]), found


def test_a_neighbour_never_stands_alone(memory: Memory) -> None:
    for query in ("window seat", "oat milk", "kyoto", "peanuts"):
        results = list(memory.search(query, limit=10).results)
        assert results and results[0]["via"] != "neighbour", (query, results)
        assert all(r["score"] > 0 for r in results), (query, results)


@pytest.fixture
def dana(vault: Vault) -> Memory:
    memory = Memory.open(vault.root)
    for text in ENTRIES[1:]:
        memory.add(text)
    return memory


def via_mcp(memory: Memory, **arguments: Any) -> list[dict[str, Any]]:
    server = build_server(memory)

    async def main() -> Any:
        return await server.call_tool("memory_search", arguments)

    out = anyio.run(main)
    assert not out.is_error, out.content
    return list(json.loads(out.content[0].text)["results"])


def test_the_exact_entry_ranks_first_through_every_door(dana: Memory, memd) -> None:  # type: ignore[no-untyped-def]
    exact = "Dana takes her coffee with oat milk"
    api = list(dana.search("oat milk", limit=3).results)
    cli5 = json.loads(memd("search", "oat milk", "--limit", "5", "--json").output)
    cli3 = json.loads(memd("search", "oat milk", "--limit", "3", "--json").output)
    mcp5 = via_mcp(dana, query="oat milk", limit=5)
    mcp3 = via_mcp(dana, query="oat milk", limit=3)
    for results in (api, cli3, cli5, mcp3, mcp5):
        assert results[0]["text"] == exact, results
        assert_evidence_first(results, ("oat", "milk"))
    cites = [r["cite"] for r in cli5]
    assert [r["cite"] for r in mcp5] == cites
    assert [r["cite"] for r in api] == [r["cite"] for r in cli3] == [r["cite"] for r in mcp3] == cites[:3]


def entry(n: int, time: str = "2026-11-20T10:00:00Z") -> Record:
    return Record(f"CURRENT.md#{n}", "entry", "CURRENT", "CURRENT.md", (), n, n, f"line {n}", str(n), (n,), time=time)


def test_context_follows_all_evidence_in_the_order_of_its_hits() -> None:
    n, m = "neighbour", "match"
    ranked = [Result(entry(5), 0.6, n), Result(entry(1), 1.0, m), Result(entry(8), 0.9, m), Result(entry(2), 0.3, n)]
    ranked += [Result(entry(7), 0.4, n), Result(entry(20), 0.0, n)]  # score 0: its hit was far away in time
    ranked += [Result(entry(30), 0.5, n)]  # a neighbour of nothing shown
    out = evidence_first(ranked, lambda r: r.via == m, lambda r: r.via == n, lambda r: r.score)
    assert [r.record.seq for r in out] == ["1", "8", "2", "7"]


def test_a_match_is_never_buried_under_a_weaker_meaning_guess() -> None:
    # Demoting repetition had put the match (1.5) below a guess by meaning alone (0.9).
    m, g = "match", "meaning"
    ranked = [Result(entry(1), 2.0, m), Result(entry(5), 0.9, g), Result(entry(3), 1.5, m), Result(entry(9), 1.7, g)]
    out = evidence_first(ranked, lambda r: r.via == m, lambda r: False, lambda r: r.score)
    assert [r.record.seq for r in out] == ["1", "3", "5", "9"]


_VIA = st.sampled_from(["match", "meaning", "neighbour", "worded meaning", "worded neighbour"])


@given(st.lists(st.tuples(_VIA, st.integers(0, 20)), max_size=40), st.integers(1, 12))
def test_placing_only_the_first_places_gives_the_same_first_places(results: list[tuple[str, int]], limit: int) -> None:
    ranked = [Result(entry(n + 1), score / 10, via) for n, (via, score) in enumerate(results)]
    asked: list[Result] = []

    def matches(r: Result) -> bool:
        asked.append(r)
        return r.via == "match" or r.via.startswith("worded")

    def context(r: Result) -> bool:
        return r.via == "neighbour"

    whole = evidence_first(ranked, matches, context, lambda r: r.score)
    asked.clear()
    first = evidence_first(ranked, matches, context, lambda r: r.score, limit)
    assert first[:limit] == whole[:limit]
    # The places are full by the limit-th match at the latest: no candidate below it is read.
    found = [i for i, r in enumerate(ranked) if not context(r) and (r.via == "match" or r.via.startswith("worded"))]
    if len(found) >= limit:
        assert all(ranked.index(r) <= found[limit - 1] for r in asked)
