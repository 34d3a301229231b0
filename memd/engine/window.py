"""What a server says about its context window: where it reports the window
(llama.cpp's ``/props``, a ``/models`` entry or its ``meta``), and what its
refusal of a too-long request says (the window, the tokens it counted).
Servers word this differently; each pattern names the one it reads."""

from __future__ import annotations

import re
from typing import Any

DEFAULT_CONTEXT = 4096
CONTEXT_ERROR = re.compile(r"context|too (?:long|many tokens)|maximum.{0,20}length|exceeds?", re.IGNORECASE)
_WINDOW = [
    re.compile(r"context (?:window|size|length) of (\d+)", re.IGNORECASE),  # llama-cpp-python
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # vLLM, OpenAI
    re.compile(r"n_ctx\D{0,5}(\d+)"),  # llama.cpp
]
_REQUESTED = [
    re.compile(r"Requested tokens \((\d+)\)", re.IGNORECASE),  # llama-cpp-python: prompt + max_tokens
    re.compile(r"you requested (\d+) tokens", re.IGNORECASE),  # vLLM, OpenAI: prompt + max_tokens
]


def context_in(data: Any, model: str) -> int | None:
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
        return int(settings["n_ctx"])
    if isinstance(data.get("n_ctx"), int) and data["n_ctx"] > 0:
        return int(data["n_ctx"])
    entries = data.get("data")
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, dict) or (entry.get("id") != model and len(entries) > 1):
            continue
        found = entry.get("meta")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        for key in ("max_model_len", "context_length", "context_window", "n_ctx"):
            value = entry.get(key, meta.get(key))
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        trained = meta.get("n_ctx_train")  # llama.cpp: the model's own limit; the server's may be lower
        if isinstance(trained, int) and not isinstance(trained, bool) and 0 < trained < DEFAULT_CONTEXT:
            return trained
    return None


def server_message(err: Any) -> str:
    """The error message the server sent with an HTTP error, if any."""
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str):
            return " ".join(message.split())
    return " ".join(str(getattr(err, "message", "") or "").split())


def requested_in(message: str) -> int | None:
    """The tokens a refused request asked for, as the server counted them (prompt and max_tokens)."""
    for pattern in _REQUESTED:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def window_in(err: Any, message: str) -> int | None:
    """The context window a refusal names (llama.cpp's n_ctx field, or the message's number)."""
    body = getattr(err, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict) and isinstance(inner.get("n_ctx"), int) and inner["n_ctx"] > 0:
        return int(inner["n_ctx"])
    for pattern in _WINDOW:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None
