"""The stdio wire: every request line gets an answer, even one that is not a request.

The SDK's stdio transport hands a line it cannot read (broken JSON, or JSON
that is no JSON-RPC message) to the session as an exception, and the session
drops it: a client waiting on that request's reply waits for ever. JSON-RPC
2.0 answers such a line with an error: -32700 "Parse error" when the line is
not JSON, -32600 "Invalid Request" when it is JSON of the wrong shape (with
the line's ``id`` when it has one, else null). ``Answering`` stands between
the transport and the session and sends those answers; the server reads on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError


def rejection(error: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering a line the transport could not read as a
    message; None for a blank line (a stray newline asks nothing)."""
    problems = _problems(error)
    if problems and problems[0].get("type") == "json_invalid":
        line = problems[0].get("input")
        if isinstance(line, str | bytes) and not line.strip():
            return None
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
    sent = problems[0].get("input") if problems else None
    ident = sent.get("id") if isinstance(sent, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        ident = None
    message = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
    return JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=INVALID_REQUEST, message=message))


def _problems(error: Exception) -> list[dict[str, Any]]:
    errors = getattr(error, "errors", None)  # pydantic's ValidationError
    if not callable(errors):
        return []
    try:
        found = errors()
    except Exception:  # not pydantic's after all: answer as for a shape it cannot read
        return []
    return [problem for problem in found if isinstance(problem, dict)] if isinstance(found, list) else []


class Answering:
    """The transport's read stream, answering (on ``replies``) each line it
    could not read instead of passing the failure on to the session."""

    def __init__(self, inner: Any, replies: Any) -> None:
        self._inner = inner
        self._replies = replies

    def __getattr__(self, name: str) -> Any:  # ``last_context`` and the like: the transport's
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        return await self._message(self._inner.receive)

    async def __anext__(self) -> Any:
        return await self._message(self._inner.__anext__)

    def __aiter__(self) -> Answering:
        return self

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Answering:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        return bool(await self._inner.__aexit__(kind, error, trace))

    async def _message(self, take: Callable[[], Awaitable[Any]]) -> Any:
        """The next message ``take`` gives, each failure before it answered."""
        while isinstance(item := await take(), Exception):
            reply = rejection(item)
            if reply is not None:
                await self._replies.send(SessionMessage(reply))
        return item
