"""The model path against a server that behaves like llama.cpp's with a small
model: a context window it enforces with HTTP 400, replies that copy the
prompt's example, extracted sentences coloured with a feeling word. Nothing
of it reaches memory; every refusal is answered with a smaller request or
the offline step, never the same request again; the user is told."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memd.app.status import endpoint_health
from memd.consolidation.verify import verify_vault
from memd.engine.sizes import prompt_size
from memd.vault.vault import Vault

from .conftest import Memd
from .model_server import Llama, ScriptedModel, Status, operation_of
from .test_agent_ask import NOTES

pytestmark = pytest.mark.slow  # the model path through a scripted HTTP server

TOPICS = ["coffee", "running", "garden", "travel", "music", "books"]
MANY = [f"Note {n} about {TOPICS[n % 6]}: detail number {n} for the {TOPICS[n % 6]} plan" for n in range(40)]
NOTE = (
    "Dana moved to Porto in May after six years in Lisbon. She starts at Feedzai on Monday as a data engineer. "
    "Her new flat is near the river, with a small balcony for the tomatoes she grows every summer.\n"
)


def configure(vault: Vault, url: str, extra: str = "") -> None:
    vault.config_path.write_text(
        f'[llm]\nbase_url = "{url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "2s"\ngating = "off"\n{extra}'
    )


def assert_nothing_lost(vault: Vault, seqs: int) -> None:
    report = verify_vault(vault)
    assert not report.problems and report.live + report.superseded == seqs


def key(request: dict) -> str:
    return json.dumps([request["messages"], request["max_tokens"]], sort_keys=True)


def test_a_512_token_window_is_learned_from_its_refusals_and_no_refused_request_is_sent_again(
    memd: Memd, vault: Vault
) -> None:
    with ScriptedModel(llama=Llama(window=512)) as server:
        configure(vault, server.url)
        memd("add", "\n".join(MANY))
        result = memd("consolidate", "--json")
        requests = list(server.requests)
        refused = list(server.refused)
    outcome = json.loads(result.stdout)
    assert outcome["entries"] == 40 and outcome["commit"]
    assert_nothing_lost(vault, 40)
    assert refused  # memd assumed 4,096 tokens: the server said otherwise
    sent = Counter(key(r) for r in requests)
    assert all(sent[key(r)] == 1 for r in refused)  # a refused request is never repeated
    # After the first refusal, memd sizes its prompts to the window the server named.
    after = requests[requests.index(refused[0]) + 1 :]
    assert all(prompt_size(r["messages"]) + r["max_tokens"] <= 512 for r in after)
    assert any("context" in w for w in outcome["warnings"])  # what did not fit was done offline, and said
    health = endpoint_health(vault)
    assert health is not None and health["context_tokens"] == 512  # remembered for the next run


def entries_of(request: dict) -> int:
    return len(json.loads(request["messages"][1]["content"]).get("entries", []))


def test_a_refused_batch_is_cut_smaller_not_dropped(memd: Memd, vault: Vault) -> None:
    with ScriptedModel(llama=Llama(window=1500)) as server:
        configure(vault, server.url)
        memd("add", "\n".join(MANY))
        result = memd("consolidate", "--json")
        rewrites = [r for r in server.requests if operation_of(r) == "rewrite"]
        refused = [r for r in rewrites if r in server.refused]
    assert refused and entries_of(refused[0]) == 40  # the whole buffer, sized for 4,096 tokens
    answered = [r for r in rewrites if r not in refused]
    assert len(answered) > 1 and all(1 < entries_of(r) < 40 for r in answered[:-1])
    assert sum(entries_of(r) for r in answered) == 40  # every entry asked about once, in smaller batches
    assert not any("rewrite" in w for w in json.loads(result.stdout)["warnings"])
    assert_nothing_lost(vault, 40)


def test_the_breaker_opens_after_the_same_refusal_twice(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        for step in ("rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title"):
            server.always[step] = Status(400)
        configure(vault, server.url)
        memd("add", "\n".join(NOTES))
        result = memd("consolidate")
        assert len(server.requests) == 2  # then no more calls in this run
    assert "HTTP 400: scripted failure, 2 failures in a row" in result.output
    health = endpoint_health(vault)
    assert health is not None and health["open_until"] and health["failures"] == 2
    assert_nothing_lost(vault, 4)


def test_a_small_model_copying_the_example_or_adding_feelings_leaves_no_trace(
    memd: Memd, vault: Vault, tmp_path: Path
) -> None:
    note = tmp_path / "week.md"
    note.write_text(NOTE)
    with ScriptedModel(llama=Llama(copies=True)) as server:
        configure(vault, server.url)
        copied = memd("ingest", str(note))
        asked = json.loads(memd("ask", "Where did Dana move?", "--json").stdout)
    assert "(placeholder copy)" in copied.stderr
    assert "<a statement" not in vault.current.read_text() and "Dana moved to Porto" in vault.current.read_text()
    assert asked["engine"] == "offline" and "no tool call returned (CURRENT:12-18)" in asked["fallback"]
    assert any("no tool call returned" in w for w in asked["warnings"])
    again = tmp_path / "later.md"
    again.write_text(NOTE.replace("Dana", "Marco"))
    with ScriptedModel(llama=Llama(feeling="glad")) as server:
        configure(vault, server.url)
        coloured = memd("ingest", str(again), "--json")
    [report] = json.loads(coloured.stdout)
    assert any("adds 'glad', which its sources do not say" in w for w in report["warnings"])
    assert "glad" not in vault.current.read_text() and "Marco moved to Porto" in vault.current.read_text()


@pytest.mark.parametrize("where", ["props", "meta"])
def test_a_window_the_server_reports_is_used_from_the_first_request(memd: Memd, vault: Vault, where: str) -> None:
    with ScriptedModel(llama=Llama(window=1500, props=where == "props", meta=where == "meta")) as server:
        configure(vault, server.url)
        memd("add", "\n".join(MANY))
        memd("consolidate")
        rewrites = [r for r in server.requests if operation_of(r) == "rewrite"]
        assert rewrites and not server.refused  # sized to the window from the first request
    assert entries_of(rewrites[0]) < 40
    health = endpoint_health(vault)
    assert health is not None and health["context_tokens"] == 1500


def test_an_ask_refused_for_its_length_shrinks_what_it_shows_and_goes_on(memd: Memd, vault: Vault) -> None:
    memd("add", "\n".join(MANY))
    memd("consolidate")  # offline
    with ScriptedModel(llama=Llama(window=1000)) as server:
        configure(vault, server.url)
        data = json.loads(memd("ask", "What is the detail of the garden plan?", "--json").stdout)
        requests, refused = list(server.requests), list(server.refused)
    assert refused  # the second round, with the search results, was too long
    sent = Counter(key(r) for r in requests)
    assert all(sent[key(r)] == 1 for r in refused)
    assert len(requests) > len(refused)  # shrunk and asked again
    assert any("garden" in e["text"] for e in data["evidence"])
