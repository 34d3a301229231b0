"""Calls to an OpenAI-compatible chat endpoint, each one written to the ledger.

The ``openai`` package takes about a second to import, so it is imported on
the first call, never at start-up.
"""

from __future__ import annotations

import ipaddress
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..config import LLMSettings
from ..errors import ConfigError, MemdError
from ..ledger import Call, record

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ModelError(MemdError):
    """The endpoint failed (HTTP error, timeout, refused connection)."""


class BadOutput(MemdError):
    """The model answered, but not with what was asked for."""


def is_local(base_url: str | None) -> bool:
    """True when requests stay on this machine (loopback endpoint)."""
    if not base_url:
        return False
    host = urlparse(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ModelClient:
    def __init__(self, settings: LLMSettings, ledger: Path) -> None:
        if not settings.model:
            raise ConfigError("no model configured (set [llm] model or MEMD_MODEL)")
        key = settings.api_key
        if key is None and not is_local(settings.base_url):
            raise ConfigError(
                f"the endpoint {settings.base_url or 'api.openai.com'} needs an API key in ${settings.api_key_env}"
            )
        self.settings = settings
        self.ledger = ledger
        self.run = ""
        self._key = key or "not-needed"  # local servers ignore the key, the client insists on one
        self._client: Any = None

    def complete(self, operation: str, messages: list[dict[str, str]], model: str | None = None) -> str:
        chosen = model or self.settings.model or ""
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.settings.base_url,
                api_key=self._key,
                timeout=self.settings.timeout,
                max_retries=self.settings.max_retries,
            )
        import openai

        start = time.monotonic()
        try:
            response = self._client.chat.completions.create(model=chosen, messages=messages, temperature=0)
        except openai.APIError as err:
            record(self.ledger, Call(operation, chosen, 0, 0, round(time.monotonic() - start, 3), self.run, ok=False))
            raise ModelError(f"{operation}: the model call failed ({_describe(err)})") from None
        usage = getattr(response, "usage", None)
        record(
            self.ledger,
            Call(
                operation,
                chosen,
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
                round(time.monotonic() - start, 3),
                self.run,
            ),
        )
        if not response.choices:
            raise BadOutput(f"{operation}: the model returned no choices")
        return response.choices[0].message.content or ""


def _describe(err: Exception) -> str:
    status = getattr(err, "status_code", None)
    if status:
        return f"HTTP {status}"
    name = type(err).__name__
    return "timed out" if "Timeout" in name else f"{name}: {err}"


def parse_json(text: str) -> dict[str, Any]:
    """Lenient reading: code fences and text around the object are tolerated;
    anything that is not one complete JSON object is BadOutput."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise BadOutput("the reply holds no JSON object")
    try:
        value = json.loads(body[start : end + 1])
    except ValueError as err:
        raise BadOutput(f"the reply is not valid JSON ({err.args[0] if err.args else err})") from None
    if not isinstance(value, dict):
        raise BadOutput("the reply is not a JSON object")
    return value
