"""The MCP server, driven the way an agent drives it: the SDK's client
talking to `memd mcp` in a real subprocess over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memd.mcp.catalog import TOOLS as CATALOG
from memd.mcp.catalog import WRITERS
from memd.vault.vault import Vault

pytestmark = pytest.mark.slow  # MCP servers in subprocesses

TOOLS = set(CATALOG)


def server_params(vault: Vault) -> StdioServerParameters:
    # The client passes only a safe subset of the environment; HOME and the
    # git identity come from the test's hermetic settings.
    env = {k: os.environ[k] for k in ("HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "MEMD_LOCK_TIMEOUT")}
    args = ["-m", "memd", "--vault", str(vault.root), "mcp"]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def with_session(vault: Vault, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        with open(vault.root.parent / "server-stderr.log", "w") as errlog:
            async with (
                stdio_client(server_params(vault), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await body(session)

    anyio.run(main)


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text content carries the same JSON, for clients that ignore structured output.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def test_an_agent_lists_the_tools_adds_a_memory_then_searches_and_asks(vault: Vault) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        seen["tools"] = listed
        seen["added"] = await call(session, "memory_add", text="Dana takes her coffee with oat milk.", source="user")
        seen["search"] = await call(session, "memory_search", query="oat milk")
        seen["ask"] = await call(session, "memory_ask", question="How does Dana take her coffee?")
        seen["status"] = await call(session, "memory_status")

    with_session(vault, body)

    tools = seen["tools"]
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert len(tool.description or "") > 80, f"{name} needs a description an agent can act on"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name not in WRITERS), name
        assert tool.annotations.destructive_hint is (name in {"memory_update", "memory_forget"}), name
    assert tools["memory_add"].input_schema["required"] == ["text"]
    assert "text" in tools["memory_add"].input_schema["required"]

    added = seen["added"]["added"][0]
    assert added["path"] == "CURRENT.md"
    assert "source=user" in added["signature"]
    assert vault.current.read_text().count("Dana takes her coffee with oat milk.") == 1

    top = seen["search"]["results"][0]
    assert top["path"] == "CURRENT.md" and top["line"] == added["line"]
    assert top["seq"] == added["seq"]  # a number, as memory_add gave it

    answer = seen["ask"]
    assert answer["found"] is True
    assert "oat milk" in answer["answer"]
    assert f"CURRENT.md:{added['line']}" in answer["answer"]

    assert seen["status"]["buffer"]["entries"] == 1
    assert seen["status"]["engine"]["name"] == "offline"


def test_the_reading_tools_browse_the_example_vault(example: Vault) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["list"] = await call(session, "memory_list")
        seen["grep"] = await call(session, "memory_grep", pattern="ryokan", context=0)
        match = seen["grep"]["matches"][0]
        seen["read"] = await call(session, "memory_read", doc=match["path"], start=match["line"], end=match["line"] + 1)
        seen["in_doc"] = await call(session, "memory_grep", pattern="kyoto", doc="travel")

    with_session(example, body)

    ids = [doc["id"] for doc in seen["list"]["docs"]]
    assert ids == ["CURRENT", *sorted(p.stem for p in example.topic_files())]
    travel = next(doc for doc in seen["list"]["docs"] if doc["id"] == "travel")
    assert "Kyoto" in travel["summary"]

    match = seen["grep"]["matches"][0]
    assert match["path"] == "topics/travel.md"
    line = example.root.joinpath(match["path"]).read_text().splitlines()[match["line"] - 1]
    assert seen["read"]["lines"][0] == {"line": match["line"], "text": line}
    assert len(seen["read"]["lines"]) == 2
    assert {m["path"] for m in seen["in_doc"]["matches"]} == {"topics/travel.md"}


def test_mistakes_come_back_as_tool_errors_the_agent_can_read(example: Vault) -> None:
    errors: dict[str, str] = {}

    async def body(session: ClientSession) -> None:
        for name, arguments in {
            "unknown doc": ("memory_read", {"doc": "no-such-topic"}),
            "bad regex": ("memory_grep", {"pattern": "(unclosed"}),
            "bad time": ("memory_add", {"text": "x", "time": "last tuesday"}),
            "empty text": ("memory_add", {"text": "   "}),
            "limit": ("memory_search", {"query": "kyoto", "limit": 0}),
        }.items():
            result = await session.call_tool(*arguments)
            assert result.is_error, name
            errors[name] = result.content[0].text
        # The server is still serving after the errors.
        await call(session, "memory_status")

    with_session(example, body)
    assert "no document 'no-such-topic'" in errors["unknown doc"]
    assert "invalid regular expression" in errors["bad regex"]
    assert "last tuesday" in errors["bad time"]
    assert "nothing to add" in errors["empty text"]
    assert "limit" in errors["limit"]
    assert "memory_list" in errors["unknown doc"] and "memd " not in errors["unknown doc"]
    assert errors["limit"] == "memory_search: limit must be greater than or equal to 1 (got 0)"
    assert "pydantic" not in " ".join(errors.values()) and "validation error" not in " ".join(errors.values())
    assert "x" not in example.current.read_text().split("source=")[-1].split(">")[-1]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def exchange(vault: Vault, lines: list[str | dict[str, Any]]) -> list[dict[str, Any]]:
    """Every line the server writes, sending ``lines`` to `memd mcp` one at a
    time (a dict as JSON) and, like an agent, waiting for the reply to each
    one that asks for one (a dict with an id, or a line that is not JSON-RPC):
    the SDK may serve requests sent together concurrently, in any order. The
    server stops when stdin closes, so it stays open until every reply is in."""
    server = subprocess.Popen(
        [sys.executable, "-m", "memd", "--vault", str(vault.root), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    watchdog = threading.Timer(60, server.kill)  # a hung server fails the test instead of hanging it
    watchdog.start()
    written = []
    for line in lines:
        asks = "id" in line if isinstance(line, dict) else bool(line.strip())
        server.stdin.write((json.dumps(line) if isinstance(line, dict) else line) + "\n")
        server.stdin.flush()
        if asks:
            written.append(server.stdout.readline())
    server.stdin.close()
    written += server.stdout.read().splitlines()
    assert server.wait(timeout=30) == 0
    watchdog.cancel()
    return [json.loads(line) for line in written if line.strip()]


def test_stdout_carries_only_the_protocol(vault: Vault) -> None:
    replies = exchange(
        vault,
        [
            INITIALIZE,
            INITIALIZED,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "memory_add", "arguments": {"text": "Likes long walks."}},
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "memory_ask", "arguments": {"question": "what does she like?"}},
            },
        ],
    )
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    assert [reply.get("id") for reply in replies] == [1, 2, 3]
    assert "Likes long walks." in replies[2]["result"]["structuredContent"]["answer"]


def test_a_line_that_is_no_request_is_answered_and_the_server_reads_on(vault: Vault) -> None:
    # A client that sends a broken line waits for its reply: without one it would wait for ever.
    replies = exchange(
        vault,
        [
            INITIALIZE,
            INITIALIZED,
            '{"jsonrpc": "2.0", "id": 7, "method": tools/list}',  # not JSON
            "",  # a stray newline asks nothing
            '{"jsonrpc": "2.0", "id": 8, "meth": "tools/list"}',  # JSON, but no request
            "[1, 2]",
            {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
        ],
    )
    assert [(reply.get("id"), reply.get("error", {}).get("code")) for reply in replies] == [
        (1, None),
        (None, -32700),
        (8, -32600),
        (None, -32600),
        (9, None),
    ]
    assert {tool["name"] for tool in replies[-1]["result"]["tools"]} == TOOLS


def test_memd_help_does_not_load_the_mcp_sdk() -> None:
    code = "import sys; from memd.cli import main; main(['--help'], standalone_mode=False); print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "mcp " in done.stdout and done.stdout.strip().endswith("False")


def test_the_cli_and_mcp_report_the_same_facts_and_write_the_same_entries(vault: Vault) -> None:
    from click.testing import CliRunner

    from memd.cli import main

    def cli(*args: str) -> Any:
        result = CliRunner().invoke(main, ["--vault", str(vault.root), *args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    [by_cli] = cli("add", "Dana takes her coffee with oat milk.", "--time", "2026-11-20T09:00:00Z")
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["add"] = await call(
            session, "memory_add", text="Dana is allergic to peanuts.", source="user", time="2026-11-20T09:00:00Z"
        )
        seen["status"] = await call(session, "memory_status")

    with_session(vault, body)
    [by_mcp] = seen["add"]["added"]
    assert set(by_mcp) == set(by_cli) and by_mcp["path"] == by_cli["path"] == "CURRENT.md"
    assert by_mcp["seq"] == by_cli["seq"] + 1 and by_mcp["line"] == by_cli["line"] + 1
    assert by_mcp["signature"] == by_cli["signature"].replace(f"seq={by_cli['seq']}", f"seq={by_mcp['seq']}")
    status = cli("status")
    for facts in (status, seen["status"]):
        facts["buffer"].pop("age_seconds")  # seconds pass between the two calls
    assert status == seen["status"]


def test_an_agent_can_set_extra_signature_keys_but_not_the_seq(vault: Vault) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["added"] = await call(
            session,
            "memory_add",
            text="The Atlas cut-over moved to May.",
            meta={"project": "atlas", "confidence": "high"},
        )
        refused = await session.call_tool("memory_add", {"text": "x", "meta": {"seq": "5"}})
        seen["refused"] = (refused.is_error, refused.content[0].text)
        # A supersedes mark would retire whatever entry it names, unchecked: memory_update checks.
        replacing = await session.call_tool("memory_add", {"text": "Sam lives in Faro", "meta": {"supersedes": "1"}})
        seen["replacing"] = (replacing.is_error, replacing.content[0].text)

    with_session(vault, body)
    [added] = seen["added"]["added"]
    assert added["signature"].endswith(",project=atlas,confidence=high>")
    assert seen["refused"][0] and "seq is assigned by memd" in seen["refused"][1]
    assert seen["replacing"][0] and "call memory_update" in seen["replacing"][1]
    assert "Faro" not in vault.current.read_text()


def test_a_seq_is_a_number_or_a_string_going_in_and_a_number_coming_out(vault: Vault) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        [added] = (await call(session, "memory_add", text="Dana lives in Lisbon.", source="user"))["added"]
        seen["added"] = added
        seen["found"] = (await call(session, "memory_search", query="Lisbon"))["results"][0]
        seen["by_number"] = await call(session, "memory_get", seq=added["seq"])
        seen["by_string"] = await call(session, "memory_get", seq=str(added["seq"]))
        seen["history"] = await call(session, "memory_history", target=added["seq"])
        seen["update"] = await call(
            session, "memory_update", seq=added["seq"], text="Dana lives in Porto.", reason="moved"
        )
        seen["forget"] = await call(session, "memory_forget", seq=str(seen["update"]["added"]["seq"]))

    with_session(vault, body)
    seq = seen["added"]["seq"]
    assert isinstance(seq, int)
    assert seen["found"]["seq"] == seq and seen["by_number"] == seen["by_string"]
    assert seen["by_number"]["seq"] == seq and seen["by_number"]["seqs"] == [seq]
    assert seen["history"]["seq"] == seq and seen["history"]["steps"][0]["entry"]["seq"] == seq
    assert seen["update"]["supersedes"]["seq"] == seq and seen["update"]["added"]["seq"] == seq + 1
    assert seen["forget"]["seqs"] == seq + 1


def test_a_merged_seq_set_stays_a_string() -> None:
    from memd.mcp.tools import seqs_as_numbers

    found = {"seq": "12+41-43", "seqs": [12, 41, 42, 43], "replaced_by": [{"seq": "44"}], "text": "12"}
    assert seqs_as_numbers(found) == {
        "seq": "12+41-43",
        "seqs": [12, 41, 42, 43],
        "replaced_by": [{"seq": 44}],
        "text": "12",
    }


def test_the_tools_come_from_one_list_that_the_server_and_the_help_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    from click.testing import CliRunner

    from memd import Memory
    from memd.cli import main
    from memd.mcp.server import INSTRUCTIONS, build_server
    from memd.mcp.tools import Tools

    shown = CliRunner().invoke(main, ["mcp", "--help"]).output
    assert all(name in " ".join(shown.split()) for name in CATALOG)
    assert set(re.findall(r"memory_[a-z]+", INSTRUCTIONS)) <= TOOLS
    # A tool written in one place only never ships: the server refuses to be built.
    monkeypatch.setattr(Tools, "memory_extra", lambda self: {}, raising=False)
    with pytest.raises(RuntimeError, match="memory_extra"):
        build_server(Memory.__new__(Memory))
