"""`memd ask` with a model: tool rounds, cited answers, and what happens when
the model misbehaves (the offline evidence and answer are the floor, and the
person is told when they got it instead of the model's)."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import pytest

from memd.core.ledger import read
from memd.vault.vault import Vault

from .conftest import Memd
from .model_server import Length, ScriptedModel, operation_of

pytestmark = pytest.mark.slow  # the model path through a scripted HTTP server

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


def ask(memd: Memd, question: str, *flags: str) -> tuple[dict, str]:
    result = memd("ask", question, "--json", *flags)
    return json.loads(result.stdout), result.stderr


def test_show_steps_prints_each_round_and_the_answer_cites_evidence(memd: Memd, model: ScriptedModel) -> None:
    result = memd("ask", "How does Dana take her coffee?", "--show-steps")
    assert "round 1: search(query='How does Dana take her coffee?')" in result.output
    assert "round 2: done" in result.output
    data, notes = ask(memd, "How does Dana take her coffee?", "--show-steps")
    assert data["engine"] == "llm" and data["found"] and data["fallback"] is None and notes == ""
    cited = data["answer"].split("[")[1].rstrip("].")
    assert cited in {e["cite"] for e in data["evidence"]}
    assert any("oat milk" in e["text"] for e in data["evidence"])
    assert [s["round"] for s in data["steps"]] == [1, 2]
    asks = [c for c in read(memd.vault.meta_dir / "ledger.jsonl") if c.get("run") == "ask"]
    assert {c["operation"] for c in asks} == {"agent_step", "answer"}
    stats = json.loads(memd("stats", "--json").output)
    assert stats["query"]["asks"] == 2 and stats["query"]["tokens"] > 0
    assert all(r.get("max_tokens") for r in model.requests)


def test_a_model_that_cannot_drive_the_tools_still_gets_bm25_evidence(memd: Memd, model: ScriptedModel) -> None:
    model.always["agent_step"] = "let me think about that"
    data, _ = ask(memd, "Is Dana allergic to peanuts?", "--show-steps")
    assert data["steps"][-1]["note"].startswith("stopped (invalid JSON): ")
    assert any("peanuts" in e["text"] for e in data["evidence"])


def test_made_up_documents_and_citations_are_ignored(memd: Memd, model: ScriptedModel) -> None:
    model.queue(
        "agent_step", json.dumps({"done": True, "evidence": [{"doc": "../../etc/passwd", "start": 1, "end": 5}]})
    )
    model.queue("answer", json.dumps({"answer": "Peanuts [topics/invented.md:1].", "cited": ["topics/invented.md:1"]}))
    data, _ = ask(memd, "Is Dana allergic to peanuts?")
    assert all(e["path"].startswith(("topics/", "CURRENT.md")) for e in data["evidence"])
    assert all(s["cite"] != "topics/invented.md:1" for s in data["support"])


def test_tool_errors_go_back_to_the_model(memd: Memd, model: ScriptedModel) -> None:
    model.queue("agent_step", json.dumps({"calls": [{"tool": "read_lines", "args": {"doc": "nope", "start": 1}}]}))
    memd("ask", "Is Dana allergic to peanuts?")
    second = [r for r in model.requests if r["messages"][0]["content"].startswith("You answer questions")][1]
    results = json.loads(second["messages"][1]["content"])["results"]
    assert results[0]["error"].startswith("no document 'nope'")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        ({"tool": "read_lines", "args": {"doc": 1, "start": 1, "end": 5}}, "doc must be a string (got 1)"),
        ({"tool": "grep_doc", "args": {"doc": ["x"], "pattern": "a"}}, "doc must be a string (got ['x'])"),
        ({"tool": "search", "args": {"query": "Atlas", "limit": 10**9}}, "limit must be at most 200"),
    ],
    ids=["doc-int", "doc-list", "huge-limit"],
)
def test_an_argument_of_the_wrong_kind_or_size_goes_back_to_the_model(
    memd: Memd, model: ScriptedModel, call: dict, said: str
) -> None:
    # A doc of 1 was a traceback; a search limit of 10^9 made the index allocate 32 GB and abort.
    model.queue("agent_step", json.dumps({"calls": [call]}))
    memd("ask", "Is Dana allergic to peanuts?")
    second = [r for r in model.requests if r["messages"][0]["content"].startswith("You answer questions")][1]
    results = json.loads(second["messages"][1]["content"])["results"]
    assert results[0]["error"].startswith(said)


def test_an_unusable_answer_falls_back_to_the_extractive_one_and_says_so(memd: Memd, model: ScriptedModel) -> None:
    model.always["answer"] = "no json here"
    data, notes = ask(memd, "Is Dana allergic to peanuts?")
    assert "Allergic to peanuts" in data["answer"]
    assert data["engine"] == "offline" and "showing the extractive answer" in data["fallback"]
    assert notes.startswith("note: the model's answer was not used (the reply holds no JSON object)")


ANSWERS = {
    "the template's old example": {
        "answer": "Dana is allergic to peanuts [topics/coffee-and-food.md:12].",
        "cited": ["topics/coffee-and-food.md:12"],
    },
    "citations outside the evidence": {
        "answer": "Allergic to peanuts [topics/nowhere.md:3] [/etc/passwd:1].",
        "cited": ["topics/nowhere.md:3", "/etc/passwd:1"],
    },
    "cited: null": {"answer": "Allergic to peanuts.", "cited": None},
    "cited: a string": {"answer": "Allergic to peanuts.", "cited": "all of it"},
    "answer: a number": {"answer": 42, "cited": []},
    "the format line's placeholder": {"answer": "<one or two sentences, each ending with its [ref]>", "cited": []},
}


@pytest.mark.parametrize("kind", ANSWERS)
def test_an_answer_that_is_not_grounded_never_reaches_the_user_as_a_cited_answer(
    memd: Memd, model: ScriptedModel, kind: str
) -> None:
    model.always["answer"] = json.dumps(ANSWERS[kind])
    data, notes = ask(memd, "Is Dana allergic to peanuts?")
    assert data["engine"] == "offline" and data["fallback"] and notes.startswith("note: ")
    assert data["answer"].startswith("Allergic to peanuts, carries an EpiPen")  # the extractive answer
    evidence = {e["cite"] for e in data["evidence"]}
    assert {s["cite"] for s in data["support"]} <= evidence
    assert "nowhere" not in data["answer"] and "passwd" not in data["answer"]
    assert model.operations().count("answer") == 2  # sent back once with the reason


def evidence_ref(model: ScriptedModel, text: str) -> str:
    request = next(r for r in model.requests if '"evidence"' in r["messages"][1]["content"])
    evidence = json.loads(request["messages"][1]["content"])["evidence"]
    return next(e["ref"] for e in evidence if text in e["text"])


def test_a_claim_citing_outside_the_evidence_loses_the_citation_and_is_marked(memd: Memd, model: ScriptedModel) -> None:
    memd("ask", "Is Dana allergic to peanuts?")  # learn the ref the evidence gets
    ref = evidence_ref(model, "peanuts")
    model.always["answer"] = json.dumps(
        {"answer": f"Allergic to peanuts [{ref}]. Carries an EpiPen [topics/nowhere.md:3].", "cited": [ref]}
    )
    data, _ = ask(memd, "Is Dana allergic to peanuts?")
    assert data["engine"] == "llm"
    assert data["answer"] == f"Allergic to peanuts [{ref}]. Carries an EpiPen [unsupported]."
    assert [s["cite"] for s in data["support"]] == [ref]


def test_an_answer_adding_facts_to_its_evidence_is_replaced(memd: Memd, model: ScriptedModel) -> None:
    memd("ask", "Is Dana allergic to peanuts?")
    ref = evidence_ref(model, "peanuts")
    model.always["answer"] = json.dumps(
        {"answer": f"Dana has been allergic to peanuts and shellfish since 2019 [{ref}].", "cited": [ref]}
    )
    data, notes = ask(memd, "Is Dana allergic to peanuts?")
    assert data["engine"] == "offline" and "not supported by the evidence it cites" in data["fallback"]
    assert "2019" not in data["answer"] and "shellfish" not in data["answer"]
    assert notes.startswith("note: the model's answer was not used")


def test_an_unreachable_endpoint_answers_offline_at_once_and_says_so(memd: Memd, vault: Vault) -> None:
    memd("add", "\n".join(NOTES))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again at once: nothing listens there
    vault.config_path.write_text(f'[llm]\nbase_url = "http://127.0.0.1:{port}/v1"\nmodel = "m"\n')
    result = memd("ask", "Is Dana allergic to peanuts?", "--json")
    data = json.loads(result.stdout)
    assert data["engine"] == "offline" and "connection failed" in data["fallback"]
    assert "answered offline" in result.stderr and "Allergic to peanuts" in data["answer"]
    failed = [c for c in read(vault.meta_dir / "ledger.jsonl") if c.get("ok") is False]
    assert len(failed) == 1 and sum(c["latency"] for c in failed) < 1.0  # refused, not waited for
    human = memd("ask", "Is Dana allergic to peanuts?")
    assert human.stderr.startswith("note: ") and human.stdout.startswith("Allergic to peanuts")


def test_an_answer_cut_at_the_length_limit_is_asked_again_with_more_room(memd: Memd, model: ScriptedModel) -> None:
    model.queue("answer", Length('{"answer": "Allergic to pea'))
    data, notes = ask(memd, "Is Dana allergic to peanuts?")
    assert data["engine"] == "llm" and notes == ""
    first, second = [r["max_tokens"] for r in model.requests if operation_of(r) == "answer"]
    assert second == 2 * first


# --- evidence the model saw ------------------------------------------------------

COPIED_EXAMPLE = json.dumps({"done": True, "evidence": [{"doc": "CURRENT", "start": 12, "end": 18}]})


def test_evidence_citing_lines_no_tool_returned_gives_the_extractive_answer_with_a_note(
    memd: Memd, model: ScriptedModel
) -> None:
    # What a small model did with the old prompt: finish in round 1, citing
    # the format line's example range without calling a tool.
    model.always["agent_step"] = COPIED_EXAMPLE
    data, notes = ask(memd, "Is Dana allergic to peanuts?", "--show-steps")
    assert data["engine"] == "offline" and data["answer"].startswith("Allergic to peanuts, carries an EpiPen")
    assert "the model cited lines no tool call returned (CURRENT:12-18)" in data["fallback"]
    assert "\nnote: the model cited lines no tool call returned" in notes
    assert "answer" not in model.operations()  # no answer was written from unseen lines
    assert model.operations().count("agent_step") == 2  # sent back once with the reason
    assert "no tool call returned" in model.requests[1]["messages"][-1]["content"]


def test_evidence_is_cut_to_the_lines_the_tools_returned(memd: Memd, model: ScriptedModel) -> None:
    memd("ask", "Is Dana allergic to peanuts?")
    hit = next(
        r
        for request in model.requests
        for result in json.loads(request["messages"][1]["content"]).get("results", [])
        for r in (result.get("result") or {}).get("results", [])
        if "peanuts" in r["text"]
    )
    # Round 2 cites a wide range around the one hit it was shown: what it
    # never saw is not read as its evidence.
    model.queue("agent_step", json.dumps({"calls": [{"tool": "search", "args": {"query": "peanuts"}}]}))
    model.queue("agent_step", json.dumps({"done": True, "evidence": [{"doc": hit["path"], "start": 1, "end": 500}]}))
    data, notes = ask(memd, "Is Dana allergic to peanuts?")
    assert data["engine"] == "llm" and notes == ""
    assert any("peanuts" in e["text"] for e in data["evidence"])


def test_a_reply_copying_the_templates_example_numbers_is_rejected(memd: Memd, model: ScriptedModel) -> None:
    from memd.engine.prompts import NAMES, load, template_numbers

    assert all(template_numbers(load(name)) == set() for name in NAMES)  # shipped: placeholders only
    # A vault's own template may still show numbers: a reply that copies
    # them, not read from its input, is refused.
    old = load("agent_step").replace("<its first line>", "12").replace("<its last line>", "18")
    (memd.vault.meta_dir / "templates").mkdir()
    (memd.vault.meta_dir / "templates" / "agent_step.md").write_text(old)
    model.always["unknown"] = COPIED_EXAMPLE.replace("CURRENT", "topics/coffee-and-food.md")
    data, _ = ask(memd, "Is Dana allergic to peanuts?", "--show-steps")
    note = data["steps"][0]["note"]  # 12 or 18: whichever the round's input does not hold
    assert re.search(r"the reply copies the number 1[28] from the prompt's example", note)
    assert "Allergic to peanuts" in data["answer"]


def test_a_model_that_finds_no_answer_in_the_evidence_says_so(memd: Memd, model: ScriptedModel) -> None:
    model.queue("answer", json.dumps({"answer": "", "cited": [], "found": False}))
    data, _ = ask(memd, "What was Dana's finishing time in the Lisbon half marathon?")
    assert data["found"] is False and data["engine"] == "llm" and data["fallback"] is None
    assert data["answer"].startswith("Nothing in memory answers this; closest: ")
    assert data["support"] == [] and data["evidence"]  # what was read stays visible
    prompt = next(r for r in model.requests if operation_of(r) == "answer")
    assert '"found": false' in prompt["messages"][0]["content"]  # the model is told how to say it


def test_a_secret_typed_by_hand_into_a_topic_never_reaches_the_model(memd: Memd, model: ScriptedModel) -> None:
    secret = "sk-proj-" + "Q7x9Lm2Pz4" * 4
    for topic in memd.vault.topic_files():
        with topic.open("a") as edited:
            edited.write(f"- Dana's coffee club card: the api key is {secret}\n")  # typed by hand
    data, _ = ask(memd, "How does Dana take her coffee?")
    assert data["found"] and any("oat milk" in e["text"] for e in data["evidence"])
    sent = json.dumps(model.requests)
    assert "coffee club card" in sent  # the line was read for the model, the key was not
    assert secret not in sent


def test_the_tools_show_the_model_no_secret_typed_by_hand(memd: Memd, model: ScriptedModel) -> None:
    secret = "ghp_" + "R8kd2Lq9Zt" * 4
    [topic, *_] = memd.vault.topic_files()
    with topic.open("a") as edited:
        edited.write(f"- the deploy token is {secret}\n")  # typed by hand
    doc = topic.stem
    calls = [
        {"tool": "read_lines", "args": {"doc": doc, "start": 1}},
        {"tool": "grep", "args": {"pattern": "deploy token"}},
        {"tool": "grep_doc", "args": {"doc": doc, "pattern": "deploy"}},
    ]
    model.queue("agent_step", json.dumps({"calls": calls}))
    memd("ask", "What is the deploy token?")
    sent = json.dumps(model.requests)
    assert "the deploy token is [REDACTED:github-token]" in sent
    assert secret not in sent
