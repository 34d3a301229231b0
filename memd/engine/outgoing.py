"""What leaves the machine: every message memd sends a model, secrets redacted.

Text reaches a prompt from many places (the buffer, topics, a person's notes,
the tools' results): memd's own appends are redacted as they are written,
but a line typed by hand is not, and a model endpoint is someone else's
machine. So the client redacts every message as ``memd/core/redact.py``
does, the last step before it is sent. A message that is a JSON document is
redacted value by value, so it stays valid JSON; a message with nothing to
redact is sent exactly as it was.
"""

from __future__ import annotations

import json


def redacted(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """``messages`` with what looks like a secret replaced by ``[REDACTED:kind]``."""
    return [{**message, "content": _content(message["content"])} for message in messages]


def _content(text: str) -> str:
    from memd.core.redact import redact, redact_data

    try:
        data = json.loads(text)
    except ValueError:
        scrubbed = redact(text)
        return scrubbed.text if scrubbed.findings else text
    # Value by value: a secret in JSON text is escaped (``\"password\": \"...\"``),
    # which the patterns may not match, while the model reads it unescaped.
    clean = redact_data(data)
    return text if clean == data else json.dumps(clean, ensure_ascii=False)
