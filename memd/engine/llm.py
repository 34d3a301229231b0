"""The model-backed engine: each judgement step is a prompt to a language model.

The model is never trusted. Its reply is parsed leniently (code fences, text
around the JSON), then validated strictly: every seq it was given comes back
exactly once, ids exist, titles are plain words. An invalid reply is sent
back once with the reason; a second failure, or an endpoint error, makes that
one step fall back to the offline engine, and the fallback is recorded.
Entry metadata (seqs, times, sources, provenance) always comes from memd,
never from the model: it only chooses groupings and wording.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import reduce
from pathlib import Path
from typing import Any, TypeVar

from ..prompts import load
from .base import Block, Extracted, Item, Rewrite, Route, Section, Supersession, TopicInfo, TopicUpdate
from .client import BadOutput, ModelClient, ModelError
from .offline import OfflineEngine
from .rules import combine

T = TypeVar("T")
_UNSAFE_TITLE = re.compile(r"[/\\\x00-\x1f]|\.\.")
MAX_TEXT = 4000
MAX_CATALOG = 200


class LLMEngine:
    name = "llm"
    provenance = "llm"
    uses_model = True

    def __init__(self, client: ModelClient, vault_meta: Path | None = None) -> None:
        self.client = client
        self.vault_meta = vault_meta
        self.offline = OfflineEngine()
        self.notes: list[str] = []

    def begin(self, run: str) -> None:
        self.client.run = run
        self.notes = []

    def drain_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    # --- the protocol -----------------------------------------------------

    def extract(self, text: str) -> list[Extracted]:
        def valid(data: dict[str, Any]) -> list[Extracted]:
            entries = _list(data, "entries")
            return [Extracted(_text(e.get("text") if isinstance(e, dict) else e, "entry")) for e in entries]

        return self._step("extract", {"text": text}, valid, lambda: self.offline.extract(text))

    def rewrite(self, items: list[Item]) -> Rewrite:
        keyed = {_key(item): item for item in items}
        payload = {
            "entries": [
                {"seq": k, "time": i.signature.time, "source": i.signature.source, "text": i.text}
                for k, i in keyed.items()
            ]
        }

        def valid(data: dict[str, Any]) -> Rewrite:
            used: list[str] = []
            blocks = []
            for block in _list(data, "blocks"):
                title = _title(_field(block, "title"))
                entries = [_entry(e, keyed, used, rewording=True) for e in _list(block, "entries")]
                if entries:
                    blocks.append(Block(title, tuple(entries)))
            superseded = _superseded(data, keyed, used, blocks)
            _all_once(keyed, used)
            return Rewrite(tuple(blocks), tuple(superseded))

        return self._step("rewrite", payload, valid, lambda: self.offline.rewrite(items))

    def plan(self, blocks: list[Block], topics: list[TopicInfo]) -> list[Route]:
        shown = sorted(topics, key=lambda t: -t.tokens)[:MAX_CATALOG]
        ids = {t.id for t in shown}
        payload = {
            "blocks": [
                {"block": n, "title": b.title, "entries": [i.text for i in b.items][:30]} for n, b in enumerate(blocks)
            ],
            "topics": [{"id": t.id, "summary": t.summary} for t in shown],
        }

        def valid(data: dict[str, Any]) -> list[Route]:
            routes: dict[int, Route] = {}
            for route in _list(data, "routes"):
                index = _field(route, "block")
                if not isinstance(index, int) or not 0 <= index < len(blocks) or index in routes:
                    raise BadOutput(f"route for block {index!r} is unknown or repeated")
                topic = route.get("topic")
                if topic is not None:
                    if topic not in ids:
                        raise BadOutput(f"unknown topic id {topic!r}")
                    routes[index] = Route(index, topic)
                else:
                    routes[index] = Route(index, None, _title(route.get("title") or blocks[index].title))
            if len(routes) != len(blocks):
                raise BadOutput(f"routes given for {len(routes)} of {len(blocks)} blocks")
            return [routes[n] for n in range(len(blocks))]

        return self._step("plan", payload, valid, lambda: self.offline.plan(blocks, topics))

    def update_topic(self, sections: list[Section], block: Block) -> TopicUpdate:
        existing = {_key(i): i for s in sections for i in s.items}
        incoming = {_key(i): i for i in block.items}
        keyed = {**existing, **incoming}
        payload = {
            "sections": [
                {"title": s.title, "entries": [{"seqs": [_key(i)], "text": i.text} for i in s.items]} for s in sections
            ],
            "new": [{"seqs": [k], "time": i.signature.time, "text": i.text} for k, i in incoming.items()],
        }

        def valid(data: dict[str, Any]) -> TopicUpdate:
            used: list[str] = []
            result = []
            for section in _list(data, "sections"):
                title = str(_field(section, "title")).strip()
                items = []
                for entry in _list(section, "entries"):
                    item = _entry(entry, keyed, used, rewording=True)
                    keys = [k for k in keyed if set(keyed[k].seqs) <= set(item.seqs)]
                    # An existing entry on its own keeps its exact words.
                    items.append(existing[keys[0]] if len(keys) == 1 and keys[0] in existing else item)
                result.append(Section(title, tuple(items)))
            if [s.title for s in result[: len(sections)]] != [s.title for s in sections]:
                raise BadOutput("the existing sections must keep their titles and order")
            for section in result[len(sections) :]:
                _title(section.title)
            superseded = _superseded(data, keyed, used, [Block(s.title, s.items) for s in result])
            _all_once(keyed, used)
            return TopicUpdate(tuple(result), tuple(superseded))

        return self._step("update_topic", payload, valid, lambda: self.offline.update_topic(sections, block))

    def split(self, section: Section, parts: int) -> list[Section]:
        keyed = {_key(i): i for i in section.items}
        payload = {
            "title": section.title,
            "parts": parts,
            "entries": [{"seqs": [k], "text": i.text} for k, i in keyed.items()],
        }

        def valid(data: dict[str, Any]) -> list[Section]:
            used: list[str] = []
            result = []
            for piece in _list(data, "sections"):
                keys = [_known(str(k), keyed) for k in _list(piece, "seqs")]
                used += keys
                result.append(Section(_title(_field(piece, "title")), tuple(keyed[k] for k in keys)))
            _all_once(keyed, used)
            return result

        return self._step("split", payload, valid, lambda: self.offline.split(section, parts))

    def merge_groups(self, topics: list[TopicInfo], limit_tokens: int) -> list[list[str]]:
        small = [t for t in topics if t.tokens < limit_tokens][:MAX_CATALOG]
        if len(small) < 2:
            return []
        ids = {t.id for t in small}
        payload = {"topics": [{"id": t.id, "summary": t.summary, "tokens": t.tokens} for t in small]}

        def valid(data: dict[str, Any]) -> list[list[str]]:
            groups = []
            for group in _list(data, "groups"):
                if not isinstance(group, list) or len(group) < 2 or not set(map(str, group)) <= ids:
                    raise BadOutput(f"group {group!r} must list two or more known topic ids")
                groups.append([str(g) for g in group])
            return groups

        return self._step("merge_groups", payload, valid, lambda: self.offline.merge_groups(topics, limit_tokens))

    def summarise(self, sections: list[Section]) -> str:
        payload = {"sections": [{"title": s.title, "entries": [i.text for i in s.items][:40]} for s in sections]}

        def valid(data: dict[str, Any]) -> str:
            summary = " ".join(_text(data.get("summary"), "summary").split())
            if len(summary) > 300:
                raise BadOutput("the summary is longer than 300 characters")
            return summary

        return self._step("summarise", payload, valid, lambda: self.offline.summarise(sections))

    def title(self, items: list[Item]) -> str:
        payload = {"entries": [i.text for i in items][:30]}
        return self._step("title", payload, lambda d: _title(d.get("title")), lambda: self.offline.title(items))

    # --- the loop every step shares -----------------------------------------

    def _step(
        self, operation: str, payload: dict[str, Any], valid: Callable[[dict[str, Any]], T], fallback: Callable[[], T]
    ) -> T:
        messages = [
            {"role": "system", "content": load(operation, self.vault_meta)},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        ]
        problem = ""
        for _attempt in range(2):
            try:
                reply = self.client.complete(operation, messages)
            except (ModelError, BadOutput) as err:
                problem = str(err)
                break
            try:
                return valid(_parse(reply))
            except BadOutput as err:
                problem = f"{operation}: {err}"
                messages += [
                    {"role": "assistant", "content": reply[:MAX_TEXT]},
                    {
                        "role": "user",
                        "content": f"That reply was not valid: {err}. Reply again with only the JSON object.",
                    },
                ]
        self.notes.append(f"{problem}; used the offline engine for this step")
        return fallback()


def _parse(reply: str) -> dict[str, Any]:
    from .client import parse_json

    return parse_json(reply)


def _key(item: Item) -> str:
    return str(item.seqs)


def _field(data: Any, name: str) -> Any:
    if not isinstance(data, dict) or name not in data:
        raise BadOutput(f"missing {name!r}")
    return data[name]


def _list(data: Any, name: str) -> list[Any]:
    value = _field(data, name)
    if not isinstance(value, list):
        raise BadOutput(f"{name!r} must be a list")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadOutput(f"{what} must be non-empty text")
    if len(value) > MAX_TEXT:
        raise BadOutput(f"{what} is too long")
    return value.strip()


def _title(value: Any) -> str:
    title = " ".join(_text(value, "title").split())
    if len(title) > 80 or _UNSAFE_TITLE.search(title):
        raise BadOutput(f"unsafe or overlong title {title[:60]!r}")
    return title


def _known(key: str, keyed: dict[str, Item]) -> str:
    if key not in keyed:
        raise BadOutput(f"unknown seq {key!r}")
    return key


def _entry(entry: Any, keyed: dict[str, Item], used: list[str], rewording: bool) -> Item:
    """An output entry as an Item: metadata from memd's items, words from the model."""
    keys = [_known(str(k), keyed) for k in _list(entry, "seqs")]
    if not keys:
        raise BadOutput("an entry lists no seqs")
    used += keys
    members = sorted((keyed[k] for k in keys), key=lambda i: i.seqs.last)
    merged = reduce(combine, members)
    text = _text(entry.get("text"), "entry text") if rewording and entry.get("text") else merged.text
    return Item(merged.signature, text)


def _superseded(
    data: dict[str, Any], keyed: dict[str, Item], used: list[str], blocks: list[Block]
) -> list[Supersession]:
    records = []
    for record in data.get("superseded") or []:
        old = _known(str(_field(record, "old")), keyed)
        new = _known(str(_field(record, "new")), keyed)
        holder = next((i for b in blocks for i in b.items if set(keyed[new].seqs) <= set(i.seqs)), None)
        if holder is None or old == new:
            raise BadOutput(f"superseded record {record!r} does not name a kept newer entry")
        used.append(old)
        records.append(Supersession(holder.seqs, keyed[old].seqs, str(record.get("reason", ""))[:200]))
    return records


def _all_once(keyed: dict[str, Item], used: list[str]) -> None:
    missing = [k for k in keyed if k not in used]
    if missing:
        raise BadOutput(f"seqs dropped: {', '.join(missing[:10])}; every seq must appear exactly once")
    repeated = sorted({k for k in used if used.count(k) > 1})
    if repeated:
        raise BadOutput(f"seqs repeated: {', '.join(repeated[:10])}")
