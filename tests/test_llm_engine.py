"""The model-backed engine against a real HTTP server on 127.0.0.1: good
replies are used, bad ones are retried once and then replaced by the offline
engine, and nothing is ever lost."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memd.consolidation.verify import verify_vault
from memd.core.ledger import read
from memd.engine.text import terms
from memd.vault.vault import Vault

from .conftest import Memd
from .model_server import Delay, ScriptedModel, Status, operation_of

pytestmark = pytest.mark.slow  # the model path through a scripted HTTP server

NOTES = [
    "Takes coffee with oat milk",
    "Prefers a flat white coffee in the morning",
    "Runs the Lisbon half marathon in March",
    "Long marathon training run on Sundays",
]


def configure(vault: Vault, url: str, extra: str = "", gating: str = "off") -> None:
    vault.config_path.write_text(
        f'[llm]\nbase_url = "{url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "1s"\ngating = "{gating}"\n' + extra
    )


@pytest.fixture
def model(vault: Vault) -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        configure(vault, server.url)
        yield server


def topic_paths(vault: Vault) -> list[str]:
    return sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*.md") if ".git" not in p.parts)


def assert_nothing_lost(vault: Vault, seqs: int) -> None:
    report = verify_vault(vault)
    assert not report.problems
    assert report.live + report.superseded == seqs


def last_commit_body(vault: Vault) -> str:
    return subprocess.run(
        ["git", "-C", str(vault.root), "log", "-1", "--format=%b"], capture_output=True, text=True
    ).stdout


def test_a_configured_model_does_the_consolidation(memd: Memd, model: ScriptedModel) -> None:
    memd("add", "\n".join(NOTES))
    assert "engine      llm (scripted at 127.0.0.1, local: nothing leaves this machine)" in memd("status").output
    result = memd("consolidate")
    assert "warning" not in result.output
    [path] = memd.vault.topic_files()
    assert path.name == "takes-coffee-with.md"  # the scripted model titles with an entry's first words
    text = path.read_text()
    assert 'summary: "Takes coffee with oat milk"' in text
    assert "# Takes coffee with" in text
    assert set(model.operations()) >= {"rewrite", "plan", "update_topic", "summarise"}
    body = last_commit_body(memd.vault)
    assert "Memd-Engine: llm" in body and "Memd-Fallback" not in body
    assert_nothing_lost(memd.vault, 4)
    calls = [line for line in read(memd.vault.meta_dir / "ledger.jsonl") if "operation" in line]
    assert calls and all(c["run"] == "consolidation 1" and c["prompt_tokens"] > 0 for c in calls)
    stats = json.loads(memd("stats", "--tokens", "--json").output)
    assert stats["construction"]["consolidations"] == 1
    assert stats["construction"]["tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)
    assert stats["construction"]["per_1000_ingested"] > 0
    assert set(stats["construction"]["by_operation"]) == {c["operation"] for c in calls}


def test_garbage_for_every_call_still_consolidates_through_the_fallback(memd: Memd, model: ScriptedModel) -> None:
    for operation in ("rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title"):
        model.always[operation] = "I am sorry, I cannot help with that."
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    assert "step(s) done offline" in result.output
    assert_nothing_lost(memd.vault, 4)
    assert len(memd.vault.topic_files()) >= 1
    assert "Memd-Fallback:" in last_commit_body(memd.vault)
    # each failing step was tried twice: the reply, then once more with the reason
    assert model.operations().count("rewrite") == 2


REWRITE_ALL = '{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1", "2", "3", "4"]}]}]}'
BAD_REPLIES = {
    "non-JSON": ("rewrite", "Sure! Here are your blocks."),
    "truncated JSON": ("rewrite", '{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1"], "te'),
    "unknown doc id": ("plan", '{"routes": [{"block": 0, "topic": "no-such-topic"}]}'),
    "path-like title": ("plan", '{"routes": [{"block": 0, "topic": null, "title": "../../etc/passwd"}]}'),
    "dropped entries": ("rewrite", '{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1"]}]}]}'),
    "invented seqs": (
        "rewrite",
        '{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1", "2", "3", "4", "99"]}]}]}',
    ),
    "merging different facts": ("rewrite", REWRITE_ALL),
    "a title not from the entries": (
        "rewrite",
        '{"blocks": [{"title": "Quantum physics", "entries": [{"seqs": ["1"]}, {"seqs": ["2"]}, {"seqs": ["3"]},'
        ' {"seqs": ["4"]}]}]}',
    ),
    "a placeholder copied from the format": (
        "rewrite",
        '{"blocks": [{"title": "<title>", "entries": [{"seqs": ["1"]}, {"seqs": ["2"]}, {"seqs": ["3"]},'
        ' {"seqs": ["4"]}]}]}',
    ),
    "null fields": ("plan", '{"routes": null}'),
    "wrong-typed fields": ("update_topic", '{"place": [{"seqs": "1", "section": 3}]}'),
    "a placement without new entries": ("update_topic", '{"place": []}'),
}


@pytest.mark.parametrize("kind", BAD_REPLIES)
def test_each_kind_of_bad_output_is_retried_then_replaced(memd: Memd, model: ScriptedModel, kind: str) -> None:
    operation, reply = BAD_REPLIES[kind]
    model.always[operation] = reply
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    assert f"{operation}: " in result.output and "step(s) done offline" in result.output
    assert model.operations().count(operation) >= 2
    assert_nothing_lost(memd.vault, 4)
    for path in topic_paths(memd.vault):
        assert path in ("CURRENT.md",) or (path.startswith("topics/") and ".." not in path)
    assert not Path("/etc/passwd.md").exists()


def test_a_bad_reply_is_sent_back_once_with_the_reason(memd: Memd, model: ScriptedModel) -> None:
    model.queue("plan", '{"routes": [{"block": 0, "topic": "nope"}]}')  # then the good model answers
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    assert "warning" not in result.output
    retry = [r for r in model.requests if "That reply was not valid" in r["messages"][-1]["content"]]
    assert len(retry) == 1 and "unknown topic id 'nope'" in retry[0]["messages"][-1]["content"]
    assert [p.name for p in memd.vault.topic_files()] == ["takes-coffee-with.md"]


@pytest.mark.parametrize(
    ("replies", "outcome"),
    [
        ([Status(429)], "HTTP 429"),
        ([Status(500)], "HTTP 500"),
        ([Delay(1.5)], "timed out"),
    ],
)
def test_endpoint_failures_fall_back_and_are_recorded(
    memd: Memd, model: ScriptedModel, replies: list[Status | Delay], outcome: str
) -> None:
    model.queue("rewrite", *replies)
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    assert f"rewrite: the model call failed ({outcome})" in result.output
    assert_nothing_lost(memd.vault, 4)
    failed = [c for c in read(memd.vault.meta_dir / "ledger.jsonl") if c.get("ok") is False]
    assert failed and failed[0]["operation"] == "rewrite"
    # one failure is not a pattern: the next steps still asked the model
    assert "plan" in model.operations()


def test_a_remote_endpoint_needs_a_key_and_is_flagged(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
    monkeypatch.setenv("MEMD_MODEL", "big-model")
    memd("add", "\n".join(NOTES))
    result = memd("consolidate", ok=False)
    assert result.exit_code == 1 and "needs an API key in $OPENAI_API_KEY" in result.output
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert "content is sent to api.example.com" in memd("status").output


def test_with_recurrence_gating_routine_entries_never_reach_the_model(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        configure(vault, server.url, gating="recurrence")
        memd("add", "\n".join(NOTES))
        memd("consolidate")
        assert server.requests == []  # four unrelated notes, an empty vault: nothing to judge
        memd("add", "Takes coffee with oat milk and a little honey")  # nearly repeats seq 1
        memd("consolidate")
        asked = set(server.operations())
        assert "rewrite" not in asked and "update_topic" in asked
        [update] = [
            json.loads(r["messages"][1]["content"]) for r in server.requests if operation_of(r) == "update_topic"
        ]
        assert [e["text"] for e in update["new"]] == ["Takes coffee with oat milk and a little honey"]
    assert_nothing_lost(vault, 5)


# --- against a real model server (opt-in) -----------------------------------

LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev.json"
# Read at import: the hermetic fixture clears MEMD_* variables before each test.
REAL_URL = os.environ.get("MEMD_TEST_LLM_URL")
REAL_MODEL = os.environ.get("MEMD_TEST_LLM_MODEL", "qwen2.5:7b-instruct")


@pytest.mark.slow
@pytest.mark.skipif(not REAL_URL, reason="set MEMD_TEST_LLM_URL (and MEMD_TEST_LLM_MODEL)")
def test_a_full_cycle_against_a_real_endpoint(vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ingest -> consolidate -> ask against a real OpenAI-compatible server,
    every step asking the model. Prints calls, fallbacks, tokens and wall
    time; asserts nothing is lost and no entry says a content word its
    sources do not."""
    monkeypatch.setenv("OPENAI_BASE_URL", str(REAL_URL))
    monkeypatch.setenv("MEMD_MODEL", REAL_MODEL)
    vault.config_path.write_text('[llm]\ngating = "off"\n')  # every step asks the model: the strictest check
    memd = Memd(vault)
    started = time.monotonic()
    if LOCOMO.exists():
        conversation = json.loads(LOCOMO.read_text())[0]
        talk = conversation["conversation"]
        kept = {k: v for k, v in talk.items() if not re.match(r"session_([4-9]|\d\d)", k)}
        source = tmp_path / "conversation.json"
        source.write_text(json.dumps([{**conversation, "conversation": kept, "qa": []}]))
    else:
        source = tmp_path / "notes.md"
        source.write_text("\n\n".join(NOTES))
    ingest = memd("ingest", str(source))
    consolidate = memd("consolidate")
    answer = memd("ask", "What did Caroline go to?", "--json")
    seconds = time.monotonic() - started
    stats = json.loads(memd("stats", "--tokens", "--json").output)
    fallbacks = [line for line in (ingest.output + consolidate.output).splitlines() if "offline" in line]
    print(
        f"\nreal endpoint: {stats['calls']} calls ({stats['failed_calls']} failed), {len(fallbacks)} fallback notes, "
        f"construction {stats['construction']['tokens']} tokens (extraction "
        f"{stats['construction']['extraction_tokens']}), query {stats['query']['tokens']} tokens, {seconds:.0f}s"
    )
    for line in fallbacks:
        print("  ", line)
    assert not verify_vault(vault).problems
    data = json.loads(answer.stdout)
    assert data["evidence"]
    sources = (vault.root / "sources").rglob("*")
    source_words = {t for path in sources if path.is_file() for t in terms(path.read_text(errors="replace"))}
    source_words |= set(terms("\n".join(NOTES)))
    for path in [vault.current, *vault.topic_files()]:
        for entry in vault.read(path).signed():
            invented = set(terms(entry.entry.full_text)) - source_words
            assert not invented, f"{path.name}: {entry.entry.full_text!r} says {sorted(invented)}"


def test_engines_are_chosen_by_name(vault: Vault) -> None:
    from memd.core.errors import ConfigError
    from memd.engine import ENGINES, get_engine

    assert set(ENGINES) == {"offline", "llm"}
    assert get_engine(vault).name == "offline"
    with pytest.raises(ConfigError, match="unknown engine 'nope'; engines: offline, llm"):
        get_engine(vault, "nope")
