"""A slow, broken or small model costs bounded time and is accounted honestly:
the circuit breaker, the per-run budget, the length limit, the context
window, max_tokens on every request, and a ledger that counts failed calls."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memd.app.status import endpoint_health
from memd.consolidation.verify import verify_vault
from memd.core.ledger import read
from memd.engine.sizes import prompt_size
from memd.vault.vault import Vault

from .conftest import Memd
from .model_server import Delay, Length, NoUsage, Raw, Reply, ScriptedModel, Status, Trickle, operation_of

pytestmark = pytest.mark.slow  # the model path through a scripted HTTP server

NOTES = [
    "Takes coffee with oat milk",
    "Prefers a flat white coffee in the morning",
    "Runs the Lisbon half marathon in March",
    "Long marathon training run on Sundays",
]
STEPS = ("extract", "rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title")


def configure(vault: Vault, url: str, extra: str = "") -> None:
    vault.config_path.write_text(
        f'[llm]\nbase_url = "{url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "1s"\ngating = "off"\n{extra}'
    )


@contextmanager
def every_step_answering(memd: Memd, vault: Vault, reply: Reply) -> Iterator[ScriptedModel]:
    """A scripted endpoint that gives ``reply`` to every model step, configured for the
    vault, with ``NOTES`` in its buffer."""
    with ScriptedModel() as server:
        for step in STEPS:
            server.always[step] = reply
        configure(vault, server.url)
        memd("add", "\n".join(NOTES))
        yield server


def calls(vault: Vault) -> list[dict]:
    return [line for line in read(vault.meta_dir / "ledger.jsonl") if "operation" in line]


def assert_nothing_lost(vault: Vault, seqs: int) -> None:
    report = verify_vault(vault)
    assert not report.problems and report.live + report.superseded == seqs


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_a_hanging_endpoint_costs_at_most_two_timeouts_per_consolidation(memd: Memd, vault: Vault) -> None:
    with every_step_answering(memd, vault, Delay(1.5)) as server:
        result = memd("consolidate")
        assert len(server.requests) == 2
        assert [c["error"] for c in calls(vault)] == ["timed out", "timed out"]
        warning = [line for line in result.output.splitlines() if "failing" in line]
        assert len(warning) == 1 and "timed out, 2 failures in a row" in warning[0]
        assert "more model step(s) of this run were done offline" in warning[0]
        assert_nothing_lost(vault, 4)
        # The next run, within the cool-down, does not wait for the endpoint at all.
        memd("add", "Cycles to work on Fridays")
        again = memd("consolidate")
        assert len(server.requests) == 2 and "paused until" in again.output
    health = endpoint_health(vault)
    assert health is not None and health["last_cause"] == "timed out" and health["open_until"]
    assert health["state"].startswith("paused until")


def test_an_endpoint_that_trickles_its_reply_is_cut_at_the_call_timeout(memd: Memd, vault: Vault) -> None:
    # A byte every 0.2 s never lets a read wait the 1 s timeout; the whole reply would take
    # half an hour. The call as a whole is bounded, so the run ends with the steps offline.
    with every_step_answering(memd, vault, Trickle(0.2)):
        finished: list[str] = []
        worker = threading.Thread(target=lambda: finished.append(memd("consolidate").output), daemon=True)
        worker.start()
        worker.join(120)  # a hang guard, far above the two 1 s timeouts the run may spend
        assert finished, "consolidate still waiting on a trickling endpoint"
        assert [c["error"] for c in calls(vault)] == ["timed out", "timed out"]
        assert "timed out, 2 failures in a row" in finished[0]
    assert_nothing_lost(vault, 4)


def test_the_daemon_status_shows_the_endpoints_health(memd: Memd, vault: Vault) -> None:
    (vault.meta_dir / "daemon.json").write_text(json.dumps({"pid": 1, "state": "stopped"}))
    configure(vault, f"http://127.0.0.1:{closed_port()}/v1")
    memd("add", "\n".join(NOTES))
    memd("consolidate")
    data = json.loads(memd("daemon", "status", "--json").output)
    assert data["endpoint"]["last_cause"].startswith("connection failed")
    assert data["endpoint"]["last_success"] is None and data["endpoint"]["open_until"]


def test_a_refused_connection_fails_fast_and_opens_the_breaker(memd: Memd, vault: Vault) -> None:
    configure(vault, f"http://127.0.0.1:{closed_port()}/v1")
    memd("add", "\n".join(NOTES))
    result = memd("consolidate")
    failed = [c for c in calls(vault) if c["ok"] is False]
    assert failed and all(c["error"].startswith("connection failed") for c in failed)
    # Fast: the refusal is the error (not the 1 s timeout), and after one refusal the breaker
    # keeps every other step offline: one call made, not one per step (counted, not timed).
    assert len(failed) == 1 and len(calls(vault)) == 1
    assert result.output.count("the model endpoint is failing") == 1
    assert_nothing_lost(vault, 4)


def test_server_errors_open_the_breaker_after_two(memd: Memd, vault: Vault) -> None:
    with every_step_answering(memd, vault, Status(500)) as server:
        result = memd("consolidate")
        assert len(server.requests) == 2
        assert "HTTP 500, 2 failures in a row" in result.output
    assert_nothing_lost(vault, 4)


def test_a_refused_key_says_where_the_key_comes_from(memd: Memd, vault: Vault) -> None:
    with every_step_answering(memd, vault, Status(401)):
        result = memd("consolidate")
        assert "HTTP 401" in result.output and "check $OPENAI_API_KEY" in result.output
    assert_nothing_lost(vault, 4)


@pytest.mark.parametrize(
    "raw",
    [
        Raw("text/event-stream", 'data: {"choices": [{"delta": {"content": "{}"}}]}\n\ndata: [DONE]\n\n'),
        Raw("text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"),
    ],
    ids=["event-stream", "html-page"],
)
def test_a_reply_that_is_no_chat_completion_is_a_failed_step_not_a_traceback(
    memd: Memd, vault: Vault, raw: Raw
) -> None:
    with every_step_answering(memd, vault, raw):
        result = memd("consolidate")  # exits 0: the steps are done offline
        assert "not a chat completion" in result.output and "Traceback" not in result.output
    assert_nothing_lost(vault, 4)


def test_a_reply_at_the_length_limit_is_not_retried_with_the_same_budget(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        server.queue("rewrite", Length('{"blocks": [{"title": "Coffee", "entries": [{"seqs": ["1"'))
        configure(vault, server.url)
        memd("add", "\n".join(NOTES))
        assert "warning" not in memd("consolidate").output
        first, second = [r["max_tokens"] for r in server.requests if operation_of(r) == "rewrite"]
        assert second == 2 * first  # asked again only with room to finish
        server.always["plan"] = Length('{"routes": [')
        memd("add", "Cycles to work on Fridays")
        result = memd("consolidate")
        limits = [r["max_tokens"] for r in server.requests if operation_of(r) == "plan"]
        assert len(limits) == 3 and limits[-1] == 2 * limits[-2]  # once more, larger; then offline
        assert "plan: the reply stopped at the length limit" in result.output
    assert_nothing_lost(vault, 5)


def test_every_request_carries_max_tokens(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    note = tmp_path / "week.md"
    note.write_text("Dana moved to Porto in May. She starts at Feedzai on Monday.\n\nBought a new bike.\n")
    with ScriptedModel() as server:
        configure(vault, server.url)
        memd("ingest", str(note))
        memd("add", "\n".join(NOTES))
        memd("consolidate")
        memd("ask", "Where did Dana move?")
        operations = set(server.operations())
        assert {"extract", "rewrite", "plan", "update_topic", "summarise", "agent_step", "answer"} <= operations
        assert all(isinstance(r.get("max_tokens"), int) and r["max_tokens"] > 0 for r in server.requests)


def test_the_ledger_counts_failed_calls_and_estimates_missing_usage(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        server.queue("rewrite", Status(500))
        server.queue("plan", NoUsage(json.dumps({"routes": [{"block": 0, "topic": None, "title": "Takes coffee"}]})))
        configure(vault, server.url)
        memd("add", "\n".join(NOTES))
        memd("consolidate")
    lines = calls(vault)
    [failed] = [c for c in lines if c["ok"] is False]
    assert failed["operation"] == "rewrite" and failed["prompt_tokens"] > 0 and failed["estimated"] is True
    assert failed["completion_tokens"] == 0 and failed["error"] == "HTTP 500"
    silent = [c for c in lines if c["operation"] == "plan" and c["estimated"]]
    assert silent and silent[0]["prompt_tokens"] > 0 and silent[0]["completion_tokens"] > 0
    stats = json.loads(memd("stats", "--tokens", "--json").output)
    assert stats["failed_calls"] == 1 and stats["estimated_calls"] == 2
    assert stats["construction"]["tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in lines)


def test_stats_count_extraction_as_construction(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    note = tmp_path / "week.md"
    note.write_text("Dana moved to Porto in May. She starts at Feedzai on Monday.\n")
    with ScriptedModel() as server:
        configure(vault, server.url)
        memd("ingest", str(note))
        memd("consolidate")
    stats = json.loads(memd("stats", "--tokens", "--json").output)
    built = stats["construction"]
    assert built["extraction_tokens"] > 0 and built["consolidation_tokens"] > 0
    assert built["tokens"] == built["extraction_tokens"] + built["consolidation_tokens"]
    assert built["by_operation"]["extract"]["calls"] == 1 and built["per_1000_ingested"] > 0
    text = memd("stats", "--tokens").output
    assert "extraction" in text and "per 1,000 ingested tokens" in text and "extract " in text


def test_the_model_budget_bounds_a_run(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        configure(vault, server.url, "budget_tokens = 1\n")
        memd("add", "\n".join(NOTES))
        result = memd("consolidate")
        assert len(server.requests) == 1
        assert result.output.count("the model budget of this run is spent") == 1
    assert_nothing_lost(vault, 4)


def many_notes() -> list[str]:
    topics = ["coffee", "running", "garden", "travel", "music", "books"]
    return [f"Note {n} about {topics[n % 6]}: detail number {n} for the {topics[n % 6]} plan" for n in range(40)]


def assert_prompts_fit(server: ScriptedModel, context: int) -> None:
    for request in server.requests:
        assert prompt_size(request["messages"]) + request["max_tokens"] <= context


def test_prompts_are_split_to_fit_a_configured_context(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        configure(vault, server.url, "context_tokens = 1200\n")
        memd("add", "\n".join(many_notes()))
        assert "warning" not in memd("consolidate").output
        assert server.operations().count("rewrite") > 1  # one buffer, several calls
        assert_prompts_fit(server, 1200)
    assert_nothing_lost(vault, 40)


def test_the_context_the_server_reports_is_used(memd: Memd, vault: Vault) -> None:
    with ScriptedModel(context=1500) as server:
        configure(vault, server.url)
        memd("add", "\n".join(many_notes()))
        memd("consolidate")
        assert server.operations().count("rewrite") > 1
        assert_prompts_fit(server, 1500)
    health = endpoint_health(vault)
    assert health is not None and health["context_tokens"] == 1500


# --- fallbacks said aloud ----------------------------------------------------------

PARAGRAPHS = [
    "Dana moved to Porto in May after six years in Lisbon. She starts at Feedzai on Monday as a data engineer. "
    "Her new flat is near the river, with a small balcony for the tomatoes she grows every summer.",
    "Priya asked for the Atlas cut-over plan by Friday. The migration window is Saturday night, two hours. "
    "Marco owns the rollback script and will be on call with the database team until Sunday morning.",
    "The Kyoto trip is booked for the second week of April. Flights leave from Lisbon on the eighth. "
    "We will stay four nights in a ryokan near Gion and then take the train to Osaka for the weekend.",
]


def test_ingest_with_a_failing_model_says_which_steps_went_offline_and_why(
    memd: Memd, vault: Vault, tmp_path: Path
) -> None:
    note = tmp_path / "week.md"
    note.write_text("\n\n".join(PARAGRAPHS) + "\n")
    with ScriptedModel() as server:
        configure(vault, server.url)
        placeholder = json.dumps({"entries": [{"id": 1, "text": "<a statement copied from that text>"}]})
        server.queue("extract", placeholder, placeholder, "Sure, here you go", "Sure, here you go", Status(400))
        result = memd("ingest", str(note), "--json")
        assert server.operations().count("extract") == 5
    [report] = json.loads(result.stdout)
    warnings = report["warnings"]
    assert len(warnings) == 3  # one line per kind of failure
    assert "extract: the reply copies the placeholder" in warnings[0] and "(placeholder copy)" in warnings[0]
    assert warnings[1] == "extract: the reply holds no JSON object; 1 step(s) done offline (invalid JSON)"
    assert "the model call failed (HTTP 400)" in warnings[2] and warnings[2].endswith("(HTTP 400)")
    assert [line for line in result.stderr.splitlines() if line.startswith("warning: ")] == [
        f"warning: {w}" for w in warnings
    ]
    assert report["entries"] >= 9  # every statement kept, by the offline rules
    assert "Dana moved to Porto in May" in vault.current.read_text()


def last_commit_body(vault: Vault) -> str:
    return subprocess.run(
        ["git", "-C", str(vault.root), "log", "-1", "--format=%B"], capture_output=True, text=True, check=True
    ).stdout


def test_the_commit_trailer_names_the_real_cause_and_count(memd: Memd, vault: Vault) -> None:
    configure(vault, f"http://127.0.0.1:{closed_port()}/v1")
    memd("add", "\n".join(NOTES))
    result = memd("consolidate", "--json")
    outcome = json.loads(result.stdout)
    trailer = next(line for line in last_commit_body(vault).splitlines() if line.startswith("Memd-Fallback:"))
    assert f"{outcome['fallbacks']} step(s) done offline" in trailer
    failed, paused = (int(n) for n in re.findall(r"(?:connection failed|endpoint paused): (\d+)", trailer))
    assert failed >= 1 and paused >= 1 and failed + paused == outcome["fallbacks"]
    assert "bad model output" not in trailer
    [line] = [w for w in outcome["warnings"] if "more model step(s) of this run were done offline" in w]
    assert f"; {paused} more model step(s)" in line


def test_memds_own_budget_cutting_a_call_short_is_not_an_endpoint_failure(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        server.always["rewrite"] = Delay(2.5)
        # The call may wait 5 s, but the run has 1 s of model time: memd ends it.
        configure(vault, server.url, 'budget_time = "1s"\n')
        vault.config_path.write_text(vault.config_path.read_text().replace('timeout = "1s"', 'timeout = "5s"'))
        memd("add", "\n".join(NOTES))
        result = memd("consolidate")
    assert "the run's model time budget ran out during the call" in result.output
    assert "(budget)" in result.output and "failing" not in result.output
    health = endpoint_health(vault)
    assert health is None or health["failures"] == 0
    [cut] = [c for c in calls(vault) if c["ok"] is False]
    assert cut["error"] == "stopped at the run's budget" and cut["estimated"] is True
    assert_nothing_lost(vault, 4)


# --- costs as the server counts them -------------------------------------------------


def test_stats_keep_server_counted_and_estimated_tokens_apart(memd: Memd, vault: Vault) -> None:
    with ScriptedModel() as server:
        server.queue("rewrite", Status(400))  # refused before processing: costs nothing
        server.queue("plan", NoUsage(json.dumps({"routes": [{"block": 0, "topic": None, "title": "Takes coffee"}]})))
        configure(vault, server.url)
        memd("add", "\n".join(NOTES))
        memd("consolidate")
        requests = list(server.requests)
    lines = calls(vault)
    assert len(lines) == len(requests)  # one line per request, in order
    refused = lines[0]
    assert refused["operation"] == "rewrite" and refused["error"] == "HTTP 400" and refused["ok"] is False
    assert refused["prompt_tokens"] == 0 and refused["completion_tokens"] == 0 and refused["estimated"] is False
    [silent] = [c for c in lines if c["estimated"]]
    assert silent["operation"] == "plan" and silent["prompt_tokens"] > 0
    counted = [(c, r) for c, r in zip(lines, requests, strict=True) if c["ok"] and not c["estimated"]]
    # The scripted server counts a prompt's words: the ledger books its numbers, not memd's.
    assert counted and all(
        c["prompt_tokens"] == sum(len(m["content"].split()) for m in r["messages"]) for c, r in counted
    )
    stats = json.loads(memd("stats", "--json").output)
    assert stats["estimated_tokens"] == silent["prompt_tokens"] + silent["completion_tokens"]
    assert stats["server_counted_tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c, _ in counted)
    assert stats["tokens"] == stats["server_counted_tokens"] + stats["estimated_tokens"]
    assert stats["construction"]["by_operation"]["plan"]["estimated_tokens"] == stats["estimated_tokens"]
    assert "counted by the server" in memd("stats").output
