"""The MCP stdio wire (`memd/mcp/wire.py`): whatever line a client sends, a
request passes on to the session and anything else gets one JSON-RPC error
back, never silence and never an exception."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from memd.mcp.wire import Answering


def read(lines: list[str]) -> tuple[list[Any], list[dict[str, Any]]]:
    """What the session receives and what the client is answered, for ``lines``
    read as the SDK's stdio transport reads them."""

    async def main() -> tuple[list[Any], list[dict[str, Any]]]:
        inbound_writer, inbound = anyio.create_memory_object_stream[Any](len(lines) + 1)
        replies_writer, replies = anyio.create_memory_object_stream[SessionMessage](len(lines) + 1)
        for line in lines:
            try:  # as mcp.server.stdio reads a line
                item: Any = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:
                item = exc
            await inbound_writer.send(item)
        await inbound_writer.aclose()
        received = [item async for item in Answering(inbound, replies_writer)]
        await replies_writer.aclose()
        answered = [json.loads(m.message.model_dump_json(by_alias=True, exclude_unset=True)) async for m in replies]
        return received, answered

    return anyio.run(main)


def test_a_request_passes_and_each_broken_line_is_answered_in_its_place() -> None:
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    received, answered = read(
        [
            json.dumps(request),
            '{"jsonrpc": "2.0", "id": 4, "method": tools/list}',
            "   ",
            '{"jsonrpc": "2.0", "id": "abc", "params": {}}',
            '{"jsonrpc": "2.0", "id": true, "meth": "x"}',
            "[]",
        ]
    )
    assert [m.message.id for m in received] == [3]
    assert answered == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": "abc", "error": {"code": -32600, "message": answered[1]["error"]["message"]}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": answered[2]["error"]["message"]}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": answered[3]["error"]["message"]}},
    ]
    assert all(reply["error"]["message"].startswith("Invalid Request") for reply in answered[1:])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text().filter(lambda line: "\n" not in line and "\r" not in line), max_size=5))
def test_any_line_is_passed_on_or_answered_once(lines: list[str]) -> None:
    received, answered = read(lines)
    blank = sum(1 for line in lines if not line.strip())
    assert len(received) + len(answered) == len(lines) - blank
    assert all(reply["error"]["code"] in (-32700, -32600) for reply in answered)
