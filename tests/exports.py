"""Chat exports as the tools people use write them, for the ingest tests."""

from __future__ import annotations

from typing import Any


def node(role: str, text: str, parent: str | None, children: list[str], when: float | None) -> dict[str, Any]:
    message = {"author": {"role": role}, "content": {"content_type": "text", "parts": [text]}, "create_time": when}
    return {"message": message, "parent": parent, "children": children}


def chatgpt(
    conversations: dict[str, list[tuple[str, str]]], titles: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """A ChatGPT export: conversation id -> [(role, text)], one message a minute;
    ``titles`` by id (default "Chat <id>")."""
    out = []
    for number, (ident, turns) in enumerate(conversations.items()):
        mapping: dict[str, Any] = {"root": {"message": None, "parent": None, "children": ["m0"]}}
        for i, (role, text) in enumerate(turns):
            children = [f"m{i + 1}"] if i + 1 < len(turns) else []
            mapping[f"m{i}"] = node(
                role, text, "root" if i == 0 else f"m{i - 1}", children, 1.7e9 + number * 1e5 + i * 60
            )
        title = (titles or {}).get(ident, f"Chat {ident}")
        out.append({"id": ident, "title": title, "current_node": f"m{len(turns) - 1}", "mapping": mapping})
    return out
