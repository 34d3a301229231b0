"""What a model replies: the ``Reply``, the ways it can be unusable, and
reading the JSON object in it (fenced, or with words around it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memd.core.errors import MemdError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class BadOutput(MemdError):
    """The model answered, but not with what was asked for."""

    cause = "invalid reply"


class NotJSON(BadOutput):
    """The reply is not one JSON object."""

    cause = "invalid JSON"


@dataclass(frozen=True)
class Reply:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


def parse_json(text: str) -> dict[str, Any]:
    """Lenient reading: code fences and text around the object are tolerated;
    anything that is not one complete JSON object is BadOutput."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise NotJSON("the reply holds no JSON object")
    try:
        value = json.loads(body[start : end + 1])
    except ValueError as err:
        raise NotJSON(f"the reply is not valid JSON ({err.args[0] if err.args else err})") from None
    if not isinstance(value, dict):
        raise NotJSON("the reply is not a JSON object")
    return value
