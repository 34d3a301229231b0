"""An agent keeping the memory in order over MCP, driven the way an agent
drives it (the SDK's client talking to `memd mcp` over stdio): one entry by
seq, an update that supersedes it, a forget, topics as resources, and the
prompt that teaches when to ask and when to add."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import PaginatedRequestParams

from memd import Memory
from memd.app.hooks import AGENTS_SNIPPET
from memd.core.document import parse_document
from memd.git.command import run as git
from memd.vault.vault import Vault

from .conftest import Memd
from .test_mcp import call, with_session

pytestmark = pytest.mark.slow  # MCP servers in subprocesses


def update_log(vault: Vault) -> str:
    lines = []
    for path in vault.topic_files():
        front = parse_document(path.read_text()).frontmatter
        lines += [str(line) for line in (front.data.get("update_log") or [])] if front else []
    return "\n".join(lines)


def test_an_agent_finds_a_fact_that_changed_and_updates_it(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [old] = memory.add("Dana lives in Lisbon, near the river.").added
    memory.add("Dana takes her coffee with oat milk.")
    memd("consolidate")
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        hit = (await call(session, "memory_search", query="where does Dana live"))["results"][0]
        seen["get"] = await call(session, "memory_get", seq=hit["seq"])
        seen["update"] = await call(
            session, "memory_update", seq=hit["seq"], text="Dana lives in Porto.", reason="she moved in May"
        )
        seen["pending"] = await call(session, "memory_get", seq=hit["seq"])
        again = await session.call_tool(
            "memory_update", {"seq": hit["seq"], "text": "Dana lives in Faro.", "reason": "x"}
        )
        seen["again"] = (again.is_error, again.content[0].text)
        no_reason = await session.call_tool("memory_update", {"seq": hit["seq"], "text": "Dana lives in Faro."})
        seen["no_reason"] = (no_reason.is_error, no_reason.content[0].text)

    with_session(vault, body)
    got = seen["get"]
    assert got["seq"] == old.seq and got["text"] == "Dana lives in Lisbon, near the river."
    assert got["path"].startswith("topics/") and got["topic"] and got["cite"] == f"{got['path']}:{got['line']}"
    line = (vault.root / got["path"]).read_text().splitlines()[got["line"] - 1]
    assert line == f"- {got['signature']} {got['text']}"
    assert got["source"] == "user" and got["time"] and got["replaced_by"] == []

    added = seen["update"]["added"]
    assert added["path"] == "CURRENT.md" and added["text"] == "Dana lives in Porto."
    assert f",supersedes={old.seq},reason=she%20moved%20in%20May" in added["signature"]
    assert seen["update"]["supersedes"]["text"] == got["text"] and seen["update"]["reason"] == "she moved in May"
    # Acknowledged like an add: the line is in CURRENT.md as reported.
    assert vault.current.read_text().splitlines()[added["line"] - 1] == f"- {added['signature']} {added['text']}"
    assert seen["pending"]["replaced_by"] == [{"seq": added["seq"], "path": "CURRENT.md", "line": added["line"]}]
    assert seen["again"][0] and f"update seq {added['seq']} instead" in seen["again"][1]
    assert seen["no_reason"][0] and seen["no_reason"][1].startswith("memory_update: reason ")

    consolidated = json.loads(memd("consolidate", "--json").output)
    assert [(s["new"], s["old"]) for s in consolidated["superseded"]] == [(str(added["seq"]), str(old.seq))]
    assert f"seq {added['seq']} supersedes seq {old.seq} (she moved in May)" in update_log(vault)
    live = [
        e.entry.full_text for p in [vault.current, *vault.topic_files()] for e in parse_document(p.read_text()).signed()
    ]
    assert "Dana lives in Porto." in live and not any("Lisbon" in text for text in live)
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["superseded"] == 1 and report["problems"] == [], report


def test_an_agent_forgets_an_entry_as_memd_forget_does(vault: Vault, memd: Memd) -> None:
    memory = Memory.open(vault.root)
    [keep] = memory.add("Priya leads the Atlas team.").added
    [wrong] = memory.add("Priya's PIN is 4242.").added
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["forget"] = await call(session, "memory_forget", seq=str(wrong.seq))
        gone = await session.call_tool("memory_get", {"seq": str(wrong.seq)})
        seen["gone"] = (gone.is_error, gone.content[0].text)

    with_session(vault, body)
    forgot = seen["forget"]
    assert forgot["seqs"] == wrong.seq and forgot["removed"][0]["path"] == "CURRENT.md"
    assert "4242" not in vault.current.read_text() and "Priya leads the Atlas team." in vault.current.read_text()
    message = git(vault.root, "log", "-1", "--format=%B").stdout
    assert message.startswith(f"forget: seq {wrong.seq}") and f"Memd-Removed: {wrong.seq}" in message
    assert forgot["commit"] == git(vault.root, "rev-parse", "HEAD").stdout.strip()
    assert seen["gone"][0] and f"memory_history with target {wrong.seq}" in seen["gone"][1]
    memd("consolidate")
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"] and report["deleted_by_hand"] == 1 and report["live"] == 1, report
    assert Memory.open(vault.root).get(str(keep.seq)).to_json()["text"] == "Priya leads the Atlas team."


def test_topics_are_resources_and_the_prompt_teaches_the_memory(example: Vault) -> None:
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        seen["resources"] = (await session.list_resources()).resources
        seen["templates"] = (await session.list_resource_templates()).resource_templates
        seen["catalog"] = await call(session, "memory_list", limit=200)
        seen["travel"] = (await session.read_resource("memd://topics/travel")).contents
        for name, uri in {"unknown": "memd://topics/no-such-topic", "outside": "memd://topics/../CURRENT"}.items():
            with pytest.raises(MCPError) as refused:
                await session.read_resource(uri)
            seen[name] = str(refused.value)
        seen["prompts"] = (await session.list_prompts()).prompts
        seen["prompt"] = await session.get_prompt("memory_guide")

    with_session(example, body)
    resources = seen["resources"]
    topics = [doc for doc in seen["catalog"]["docs"] if doc["path"].startswith("topics/")]
    assert [r.name for r in resources] == [doc["id"] for doc in topics] and resources
    assert [r.description for r in resources] == [doc["summary"] for doc in topics]
    assert all(str(r.uri) == f"memd://topics/{r.name}" and r.mime_type == "text/markdown" for r in resources)
    assert [t.uri_template for t in seen["templates"]] == ["memd://topics/{+topic}"]
    [travel] = seen["travel"]
    assert travel.text == (example.root / "topics" / "travel.md").read_text() and travel.mime_type == "text/markdown"
    assert "no topic 'no-such-topic'" in seen["unknown"] and "resources/list" in seen["unknown"]
    assert "Unknown resource" in seen["outside"]

    [prompt] = seen["prompts"]
    assert prompt.name == "memory_guide" and "when to add" in (prompt.description or "")
    [message] = seen["prompt"].messages
    text = message.content.text
    assert message.role == "user" and text.startswith(AGENTS_SNIPPET)
    assert "memory_add" in text and "memory_ask" in text and "memory_update" in text and "memd://topics/" in text


def test_a_long_topic_list_comes_in_pages(vault: Vault) -> None:
    topics = vault.root / "topics"
    topics.mkdir(exist_ok=True)
    for n in range(130):
        (topics / f"t{n:03}.md").write_text(f'---\nid: "t{n:03}"\nsummary: "subject {n}"\n---\n# T{n}\n')
    pages: list[list[str]] = []
    seen: list[str] = []

    async def body(session: ClientSession) -> None:
        cursor = None
        while True:
            page = await session.list_resources(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            pages.append([r.name for r in page.resources])
            cursor = page.next_cursor
            if cursor is None or len(pages) > 5:  # a cursor that never ends would fail, not hang
                break
        with pytest.raises(MCPError) as refused:  # a digit to str.isdigit, not to int
            await session.list_resources(params=PaginatedRequestParams(cursor="²"))
        seen.append(str(refused.value))

    with_session(vault, body)
    assert [len(page) for page in pages] == [100, 30]
    assert [name for page in pages for name in page] == [f"t{n:03}" for n in range(130)]
    assert seen and "invalid cursor" in seen[0]


def test_no_tool_shows_an_agent_a_secret_typed_by_hand(vault: Vault, memd: Memd) -> None:
    token = "ghp_" + "Zq81x7KpLm2Vw9RtYb4Nc6Hd" * 2
    memory = Memory.open(vault.root)
    memory.add(["Deploys run from the atlas box", "Dana takes oat milk"])
    memd("consolidate")
    [topic] = [path for path in vault.topic_files() if "atlas" in path.read_text()]
    typed = topic.read_text().replace("Deploys run from the atlas box", f"Deploys run from the atlas box, key {token}")
    topic.write_text(typed.replace('summary: "', 'summary: "root password: hunter2 battery staple; ', 1))
    seq = next(
        str(e.entry.signature.seq) for e in parse_document(topic.read_text()).signed() if "atlas" in e.entry.text
    )
    topic_id = topic.stem
    seen: list[Any] = []

    async def body(session: ClientSession) -> None:
        seen.append(await call(session, "memory_get", seq=seq))
        seen.append(await call(session, "memory_history", target=seq))
        seen.append(await call(session, "memory_list"))
        seen.append([r.description for r in (await session.list_resources()).resources])
        seen.append([c.text for c in (await session.read_resource(f"memd://topics/{topic_id}")).contents])
        seen.append(await call(session, "memory_update", seq="2", text="Dana takes soy milk", reason=f"key {token}"))
        seen.append(await call(session, "memory_forget", seq=seq))

    with_session(vault, body)
    shown = json.dumps(seen)
    assert "atlas box" in shown and "[REDACTED:" in shown
    for secret in (token, "hunter2", "battery staple"):
        assert secret not in shown
    # The topic still holds what the person typed: forget left it out of the commit.
    forgot = seen[-1]
    assert forgot["commit"] is None and "not committing" in forgot["warning"]
    assert "hunter2" in topic.read_text()
    assert not [e for e in parse_document(topic.read_text()).signed() if "atlas box" in e.entry.text]
    assert token not in vault.current.read_text()  # the update's reason was written redacted
    history = git(vault.root, "log", "-p", "--all").stdout
    assert "hunter2" not in history and token not in history
