"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests.

The real ``openai`` client talks to it over HTTP. Replies come from a script
(text, an HTTP error, a delay, a reply cut at the length limit, a reply
without usage) per operation; when the script for an operation is empty, a
well-behaved model answers: it reads the request and returns a valid reply,
so tests can break exactly one step at a time. ``GET /v1/models`` reports
``context`` as the model's window when it is set.

``Llama`` makes it behave the way a small model on llama.cpp's server did:
a context window it enforces with HTTP 400 (counting tokens a little more
finely than memd's estimate, and saying nothing of the window beforehand,
like llama-cpp-python), replies that copy the prompt's old example and
placeholder, and extracted sentences coloured with a feeling word.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memd.engine.prompts import NAMES, load


@dataclass(frozen=True)
class Status:
    code: int


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Length:
    """A reply that stopped at max_tokens (finish_reason = length)."""

    text: str


@dataclass(frozen=True)
class NoUsage:
    """A reply whose response carries no usage numbers."""

    text: str


@dataclass(frozen=True)
class Raw:
    """A body that is no chat completion, sent with HTTP 200 (an event stream nobody
    asked for, a proxy's HTML error page)."""

    content_type: str
    body: str


@dataclass(frozen=True)
class Trickle:
    """A valid reply sent one byte every ``every`` seconds: each read gets a byte well
    within any read timeout, and the whole takes as long as the body is bytes long."""

    every: float


Reply = str | Status | Delay | Length | NoUsage | Raw | Trickle

CHARS_PER_TOKEN = 2.8  # finer than memd's estimate (3): Qwen2.5's tokenizer gave 2.98 on memd's prompts
OLD_EXAMPLE = {"done": True, "evidence": [{"doc": "CURRENT", "start": 12, "end": 18}]}


@dataclass(frozen=True)
class Llama:
    """What a small model behind llama.cpp's server does (see the module docstring)."""

    window: int | None = None  # n_ctx: longer requests are refused with HTTP 400
    props: bool = False  # answer /props with n_ctx, as llama.cpp does (llama-cpp-python does not)
    meta: bool = False  # list the model in /v1/models with llama.cpp's meta (n_ctx_train)
    copies: bool = False  # round 1 of agent_step: the old template's example; extract: its placeholder
    feeling: str | None = None  # a word added to every extracted statement ("glad")


def server_tokens(body: dict[str, Any]) -> int:
    """The prompt's size as this server's tokenizer counts it."""
    return sum(math.ceil(len(m["content"]) / CHARS_PER_TOKEN) + 4 for m in body["messages"])


def operation_of(request: dict[str, Any]) -> str:
    system = request["messages"][0]["content"]
    for name in NAMES:
        if system == load(name):
            return name
    return "unknown"


def words_of(text: str, count: int = 3) -> str:
    """A title made of the first words of a text (titles must come from their entries)."""
    words = re.findall(r"[A-Za-z]{3,}", re.sub(r"<[^>]*>", " ", text))
    return " ".join(words[:count]) or "Notes"


def good_reply(operation: str, payload: dict[str, Any]) -> dict[str, Any]:
    """What a careful model would answer (valid by construction)."""
    if operation == "extract":
        return {"entries": [{"id": t["id"], "text": t["text"]} for t in payload["texts"]]}
    if operation == "rewrite":
        entries = payload["entries"]
        return {
            "blocks": [{"title": words_of(entries[0]["text"]), "entries": [{"seqs": [e["seq"]]} for e in entries]}],
            "superseded": [],
        }
    if operation == "plan":
        return {
            "routes": [
                {"block": b["block"], "topic": None, "title": words_of(b["entries"][0] if b["entries"] else b["title"])}
                for b in payload["blocks"]
            ]
        }
    if operation == "update_topic":
        section = words_of(payload["new"][0]["text"])
        return {"place": [{"seqs": e["seqs"], "section": section} for e in payload["new"]], "superseded": []}
    if operation == "split":
        entries = payload["entries"]
        half = len(entries) // 2
        return {
            "sections": [
                {"title": words_of(entries[0]["text"]), "seqs": [s for e in entries[:half] for s in e["seqs"]]},
                {"title": words_of(entries[half]["text"]), "seqs": [s for e in entries[half:] for s in e["seqs"]]},
            ]
        }
    if operation == "merge_groups":
        return {"groups": []}
    if operation == "summarise":
        return {"summaries": [{"id": t["id"], "summary": t["entries"][0][:150]} for t in payload["topics"]]}
    if operation == "title":
        return {"title": words_of(payload["entries"][0])}
    if operation == "agent_step":
        if payload.get("round", 1) == 1:
            return {"calls": [{"tool": "search", "args": {"query": payload["question"]}}]}
        hits = [r for result in payload.get("results", []) for r in (result.get("result") or {}).get("results", [])]
        return {
            "done": True,
            "evidence": [{"doc": h["path"], "start": h["line"], "end": h["end_line"]} for h in hits[:3]],
        }
    if operation == "answer":
        if not payload["evidence"]:
            return {"answer": "Not in memory.", "cited": []}
        first = payload["evidence"][0]
        line = re.sub(r"<[^>]*>|^[#\s-]+", "", first["text"].splitlines()[-1]).strip()
        return {"answer": f"{line} [{first['ref']}]", "cited": [first["ref"]]}
    raise ValueError(operation)


def llama_reply(llama: Llama, operation: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """What the small model says instead of the careful reply, if anything."""
    if llama.copies and operation == "agent_step" and payload.get("round") == 1:
        return OLD_EXAMPLE
    if llama.copies and operation == "extract":
        return {"entries": [{"id": 1, "text": "<a statement copied from text 1>"}]}
    if llama.feeling and operation == "extract":
        return {"entries": [{"id": t["id"], "text": f"{t['text']} So {llama.feeling}."} for t in payload["texts"]]}
    return None


class ScriptedModel:
    def __init__(self, context: int | None = None, llama: Llama | None = None) -> None:
        self.script: dict[str, deque[Reply]] = defaultdict(deque)
        self.always: dict[str, Reply] = {}
        self.requests: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []  # requests turned away as longer than the window
        self.context = context
        self.llama = llama or Llama()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def queue(self, operation: str, *replies: Reply) -> None:
        self.script[operation].extend(replies)

    def operations(self) -> list[str]:
        return [operation_of(r) for r in self.requests]

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _reply_for(self, request: dict[str, Any]) -> Reply:
        operation = operation_of(request)
        if self.script[operation]:
            return self.script[operation].popleft()
        if operation in self.always:
            return self.always[operation]
        payload = json.loads(request["messages"][1]["content"])
        return json.dumps(llama_reply(self.llama, operation, payload) or good_reply(operation, payload))

    def too_long(self, request: dict[str, Any]) -> int | None:
        """The requested tokens, when they exceed the window."""
        window = self.llama.window
        wanted = server_tokens(request) + int(request.get("max_tokens") or 0)
        return wanted if window is not None and wanted > window else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/props") and model.llama.props and model.llama.window:
                    self._send(200, {"default_generation_settings": {"n_ctx": model.llama.window}})
                elif self.path.rstrip("/").endswith("/models") and model.llama.meta and model.llama.window:
                    meta = {"n_vocab": 151936, "n_ctx_train": model.llama.window, "n_params": 494032768}
                    self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model", "meta": meta}]})
                elif self.path.rstrip("/").endswith("/models") and model.context:
                    self._send(200, {"object": "list", "data": [{"id": "scripted", "max_model_len": model.context}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                wanted = model.too_long(body)
                if wanted is not None:
                    model.refused.append(body)
                    message = f"Requested tokens ({wanted}) exceed context window of {model.llama.window}"
                    self._send(400, {"error": {"message": message, "type": "invalid_request_error", "code": 400}})
                    return
                reply = model._reply_for(body)
                finish, usage = "stop", True
                if isinstance(reply, Delay):
                    time.sleep(reply.seconds)
                    reply = json.dumps({"late": True})
                if isinstance(reply, Status):
                    self._send(reply.code, {"error": {"message": "scripted failure", "type": "server_error"}})
                    return
                if isinstance(reply, Raw):
                    raw = reply.body.encode()
                    self.send_response(200)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                if isinstance(reply, Trickle):
                    self._trickle(reply.every, {"choices": [{"message": {"content": "{}"}}], "pad": "x" * 10_000})
                    return
                if isinstance(reply, Length):
                    reply, finish = reply.text, "length"
                if isinstance(reply, NoUsage):
                    reply, usage = reply.text, False
                prompt = (
                    server_tokens(body)  # its tokenizer's count
                    if model.llama.window
                    else sum(len(m["content"].split()) for m in body["messages"])
                )
                data: dict[str, Any] = {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": reply}}
                    ],
                }
                if usage:
                    data["usage"] = {
                        "prompt_tokens": prompt,
                        "completion_tokens": len(reply.split()),
                        "total_tokens": prompt + len(reply.split()),
                    }
                self._send(200, data)

            def _trickle(self, every: float, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.flush()
                    for at in range(len(raw)):
                        self.wfile.write(raw[at : at + 1])
                        self.wfile.flush()
                        time.sleep(every)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def _send(self, code: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return Handler
