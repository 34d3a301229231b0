"""The model-backed engine against a real HTTP server on 127.0.0.1: good
replies are used, bad ones are retried once and then replaced by the offline
engine, and nothing is ever lost."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memd.consolidation.run import consolidate
from memd.consolidation.verify import verify_vault
from memd.ledger import read
from memd.vault import Vault

from .conftest import Memd
from .model_server import Delay, ScriptedModel, Status

NOTES = [
    "Takes coffee with oat milk",
    "Prefers a flat white coffee in the morning",
    "Runs the Lisbon half marathon in March",
    "Long marathon training run on Sundays",
]


@pytest.fixture
def model(vault: Vault) -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        vault.config_path.write_text(
            f'[llm]\nbase_url = "{server.url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "1s"\n'
        )
        yield server


def topic_paths(vault: Vault) -> list[str]:
    return sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*.md") if ".git" not in p.parts)


def assert_nothing_lost(vault: Vault, seqs: int) -> None:
    report = verify_vault(vault)
    assert not report.problems
    assert report.live + report.superseded == seqs


def test_a_configured_model_does_the_consolidation(memd: Memd, model: ScriptedModel) -> None:
    memd("add", "\n".join(NOTES))
    assert "engine      llm (scripted at 127.0.0.1, local: nothing leaves this machine)" in memd("status").output
    result = memd("consolidate")
    assert "warning" not in result.output
    [path] = memd.vault.topic_files()
    assert path.name == "scripted-topic.md"
    text = path.read_text()
    assert 'summary: "scripted summary; a topic the scripted model kept"' in text
    assert "# Scripted section" in text
    assert set(model.operations()) >= {"rewrite", "plan", "update_topic", "summarise"}
    body = subprocess.run(
        ["git", "-C", str(memd.vault.root), "log", "-1", "--format=%b"], capture_output=True, text=True
    )
    assert "Memd-Engine: llm" in body.stdout and "Memd-Fallback" not in body.stdout
    assert_nothing_lost(memd.vault, 4)
    calls = [line for line in read(memd.vault.meta_dir / "ledger.jsonl") if "operation" in line]
    assert calls and all(c["run"] == "consolidation 1" and c["prompt_tokens"] > 0 for c in calls)
    stats = json.loads(memd("stats", "--tokens", "--json").output)
    assert stats["construction"]["consolidations"] == 1
    assert stats["construction"]["tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)
    assert stats["construction"]["per_1000_ingested"] > 0


def test_garbage_for_every_call_still_consolidates_through_the_fallback(memd: Memd, model: ScriptedModel) -> None:
    for operation in ("rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title"):
        model.always[operation] = "I am sorry, I cannot help with that."
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    assert "used the offline engine for this step" in result.output
    assert_nothing_lost(memd.vault, 4)
    assert len(memd.vault.topic_files()) >= 1
    body = subprocess.run(
        ["git", "-C", str(memd.vault.root), "log", "-1", "--format=%b"], capture_output=True, text=True
    )
    assert "Memd-Fallback:" in body.stdout
    # each failing step was tried twice: the reply, then once more with the reason
    assert model.operations().count("rewrite") == 2


BAD_REPLIES = {
    "non-JSON": ("rewrite", "Sure! Here are your blocks."),
    "truncated JSON": ("rewrite", '{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1"], "te'),
    "unknown doc id": ("plan", '{"routes": [{"block": 0, "topic": "no-such-topic"}]}'),
    "path-like title": ("plan", '{"routes": [{"block": 0, "topic": null, "title": "../../etc/passwd"}]}'),
    "dropped entries": ("rewrite", '{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1"], "text": "x"}]}]}'),
    "invented seqs": (
        "rewrite",
        '{"blocks": [{"title": "C", "entries": [{"seqs": ["1", "2", "3", "4", "99"], "text": "x"}]}]}',
    ),
    "renamed sections": ("update_topic", '{"sections": [{"title": "Hacked", "entries": []}]}'),
}


@pytest.mark.parametrize("kind", BAD_REPLIES)
def test_each_kind_of_bad_output_is_retried_then_replaced(memd: Memd, model: ScriptedModel, kind: str) -> None:
    operation, reply = BAD_REPLIES[kind]
    model.always[operation] = reply
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    assert f"{operation}: " in result.output and "used the offline engine" in result.output
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
    assert [p.name for p in memd.vault.topic_files()] == ["scripted-topic.md"]


@pytest.mark.parametrize(
    ("replies", "outcome"),
    [
        ([Status(429), Status(429)], "HTTP 429"),
        ([Status(500), Status(500)], "HTTP 500"),
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


def test_a_remote_endpoint_needs_a_key_and_is_flagged(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
    monkeypatch.setenv("MEMD_MODEL", "big-model")
    memd("add", "\n".join(NOTES))
    result = memd("consolidate", ok=False)
    assert result.exit_code == 1 and "needs an API key in $OPENAI_API_KEY" in result.output
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert "content is sent to api.example.com" in memd("status").output


@pytest.mark.skipif(not os.environ.get("MEMD_TEST_LLM_URL"), reason="set MEMD_TEST_LLM_URL (and MEMD_TEST_LLM_MODEL)")
def test_a_full_cycle_against_a_real_endpoint(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", os.environ["MEMD_TEST_LLM_URL"])
    monkeypatch.setenv("MEMD_MODEL", os.environ.get("MEMD_TEST_LLM_MODEL", "qwen2.5:7b-instruct"))
    memd = Memd(vault)
    memd("add", "\n".join(NOTES))
    outcome = consolidate(vault)
    assert outcome.engine == "llm"
    assert not verify_vault(vault).problems
    answer = json.loads(memd("ask", "How does Dana take her coffee?", "--json").output)
    assert answer["evidence"]
