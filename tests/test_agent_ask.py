"""`memd ask` with a model: tool rounds, cited answers, and what happens when
the model misbehaves (the offline evidence and answer are the floor)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from memd.ledger import read
from memd.vault import Vault

from .conftest import Memd
from .model_server import ScriptedModel

NOTES = [
    "Takes coffee with oat milk, no sugar",
    "Allergic to peanuts, carries an EpiPen",
    "Runs the Lisbon half marathon in March",
    "Long marathon training run on Sundays",
]


@pytest.fixture
def model(memd: Memd) -> Iterator[ScriptedModel]:
    memd("add", "\n".join(NOTES))
    memd("consolidate")  # offline: the model only answers questions here
    with ScriptedModel() as server:
        memd.vault.config_path.write_text(
            f'[llm]\nbase_url = "{server.url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "2s"\n'
        )
        yield server


def test_show_steps_prints_each_round_and_the_answer_cites_evidence(memd: Memd, model: ScriptedModel) -> None:
    result = memd("ask", "How does Dana take her coffee?", "--show-steps")
    assert "round 1: search(query='How does Dana take her coffee?')" in result.output
    assert "round 2: done" in result.output
    data = json.loads(memd("ask", "How does Dana take her coffee?", "--json", "--show-steps").output)
    assert data["engine"] == "llm" and data["found"]
    cited = data["answer"].split("[")[1].rstrip("].")
    assert cited in {e["cite"] for e in data["evidence"]}
    assert any("oat milk" in e["text"] for e in data["evidence"])
    assert [s["round"] for s in data["steps"]] == [1, 2]
    asks = [c for c in read(memd.vault.meta_dir / "ledger.jsonl") if c.get("run") == "ask"]
    assert {c["operation"] for c in asks} == {"agent_step", "answer"}
    stats = json.loads(memd("stats", "--json").output)
    assert stats["query"]["asks"] == 1 and stats["query"]["tokens"] > 0


def test_a_model_that_cannot_drive_the_tools_still_gets_bm25_evidence(memd: Memd, model: ScriptedModel) -> None:
    model.always["agent_step"] = "let me think about that"
    data = json.loads(memd("ask", "Is Dana allergic to peanuts?", "--json", "--show-steps").output)
    assert data["steps"][-1]["note"].startswith("stopped:")
    assert any("peanuts" in e["text"] for e in data["evidence"])


def test_made_up_documents_and_citations_are_ignored(memd: Memd, model: ScriptedModel) -> None:
    model.queue(
        "agent_step", json.dumps({"done": True, "evidence": [{"doc": "../../etc/passwd", "start": 1, "end": 5}]})
    )
    model.queue("answer", json.dumps({"answer": "Peanuts [topics/invented.md:1].", "cited": ["topics/invented.md:1"]}))
    data = json.loads(memd("ask", "Is Dana allergic to peanuts?", "--json").output)
    assert all(e["path"].startswith(("topics/", "CURRENT.md")) for e in data["evidence"])
    assert all(s["cite"] != "topics/invented.md:1" for s in data["support"])


def test_tool_errors_go_back_to_the_model(memd: Memd, model: ScriptedModel) -> None:
    model.queue("agent_step", json.dumps({"calls": [{"tool": "read_lines", "args": {"doc": "nope", "start": 1}}]}))
    memd("ask", "Is Dana allergic to peanuts?")
    second = [r for r in model.requests if r["messages"][0]["content"].startswith("You answer questions")][1]
    results = json.loads(second["messages"][1]["content"])["results"]
    assert results[0]["error"].startswith("no document 'nope'")


def test_an_unusable_answer_falls_back_to_the_extractive_one(memd: Memd, model: ScriptedModel, vault: Vault) -> None:
    model.always["answer"] = "no json here"
    data = json.loads(memd("ask", "Is Dana allergic to peanuts?", "--json").output)
    assert "Allergic to peanuts" in data["answer"]
