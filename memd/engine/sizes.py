"""How big a prompt is in a model's tokens when memd knows no tokenizer for
it: a conservative estimate, so a prompt sized by it fits the window."""

from __future__ import annotations

import math

from memd.core.tokens import count_tokens

CHARS_PER_TOKEN = 2.7  # under what common tokenizers give on memd's prompts (Qwen2.5: 2.98)
MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds per message


def model_tokens(text: str) -> int:
    """A conservative size in the model's tokens when no tokenizer is known."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_size(messages: list[dict[str, str]]) -> int:
    return sum(model_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages)


def more_room(messages: list[dict[str, str]], limit: int, context: int) -> int | None:
    """The reply limit to ask again with after a reply was cut at ``limit``: twice
    it (the same limit would cut it again), or None when the prompt leaves the
    window no room for that."""
    return None if prompt_size(messages) + 2 * limit > context else 2 * limit


def estimated_tokens(messages: list[dict[str, str]]) -> int:
    """memd's own count of what a prompt costs, for the ledger when the server is silent."""
    return sum(count_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages)
