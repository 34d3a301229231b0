"""The review tools an agent gets over MCP: memory_history and search as_of."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from .review_story import NEW_PHONE, OLD_PHONE, Story, build
from .test_mcp import call, with_session


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return build(tmp_path_factory.mktemp("story") / "vault")


def test_an_agent_checks_how_a_fact_changed_before_relying_on_it(story: Story, tmp_path: Path) -> None:
    vault = story.copy(tmp_path / "vault")
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        found = await call(session, "memory_search", query="Dana phone number")
        seen["now"] = found["results"][0]
        seen["history"] = await call(session, "memory_history", target=found["results"][0]["seq"])
        seen["old"] = await call(session, "memory_history", target=str(story.seqs[OLD_PHONE]))
        seen["past"] = await call(session, "memory_search", query="Dana phone number", as_of="2026-09-05")

    with_session(vault, body)
    assert seen["now"]["text"] == NEW_PHONE
    assert [s["kind"] for s in seen["history"]["steps"]] == ["added", "filed"]
    superseded = seen["old"]["steps"][-1]
    assert superseded["kind"] == "superseded" and superseded["superseded_by"]["entry"]["text"] == NEW_PHONE
    past = seen["past"]
    assert past["as_of"]["commit"] == story.commits["C1"]
    assert past["results"][0]["text"] == OLD_PHONE and past["results"][0]["cite"].endswith(story.commits["C1"][:7])
