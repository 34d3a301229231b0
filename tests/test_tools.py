"""The memory tools: grep, grep_doc, list_docs, read_lines (library and CLI)."""

from __future__ import annotations

import json

import pytest

from memd.ask import tools
from memd.core.errors import FormatError, NotFound
from memd.vault.vault import Vault

COFFEE = """\
---
id: coffee
summary: "coffee, oat milk"
tokens: 9
---
# Coffee
- <seq=12,time=2026-11-20T09:12,source=user> Takes coffee with Oat Milk.
- <seq=13,time=2026-11-21T08:00,source=user> Decaf after 2 pm.
"""


@pytest.fixture
def coffee(vault: Vault) -> Vault:
    (vault.topics_dir / "coffee.md").write_text(COFFEE, encoding="utf-8")
    (vault.topics_dir / "travel.md").write_text("# Kyoto\n- <seq=20,source=user> Oat milk is rare in Kyoto.\n")
    return vault


def test_grep_ignores_case_by_default_and_gives_context(coffee: Vault) -> None:
    result = tools.grep(coffee, "oat milk", context=1)
    found = [(m["path"], m["line"]) for m in result["matches"]]
    assert found == [("topics/coffee.md", 3), ("topics/coffee.md", 7), ("topics/travel.md", 2)]
    first = result["matches"][1]
    assert first["doc"] == "coffee"
    assert [line["line"] for line in first["before"]] == [6] and [line["line"] for line in first["after"]] == [8]
    assert not result["truncated"]


def test_grep_case_sensitive(coffee: Vault) -> None:
    assert [m["path"] for m in tools.grep(coffee, "Oat Milk", ignore_case=False)["matches"]] == ["topics/coffee.md"]


def test_grep_limit_marks_truncation(coffee: Vault) -> None:
    result = tools.grep(coffee, "seq=", limit=2, context=0)
    assert len(result["matches"]) == 2 and result["truncated"]


def test_grep_cuts_long_lines(vault: Vault) -> None:
    (vault.topics_dir / "long.md").write_text("# Long\n- " + "word " * 300 + "needle\n")
    [match] = tools.grep(vault, "needle", context=0)["matches"]
    assert len(match["text"]) == tools.LINE_CHARS and match["text"].endswith("…")


def test_grep_rejects_invalid_and_empty_patterns(coffee: Vault) -> None:
    with pytest.raises(tools.PatternError, match="invalid regular expression"):
        tools.grep(coffee, "(oat")
    with pytest.raises(tools.PatternError, match="empty pattern"):
        tools.grep(coffee, "")


def test_catastrophic_pattern_hits_the_time_limit(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "GREP_SECONDS", 0.2)
    (vault.topics_dir / "aaa.md").write_text("# A\n- " + "a" * 5000 + "!\n")
    with pytest.raises(tools.PatternError, match="took longer than"):
        tools.grep(vault, "(a|aa)+$")


def test_grep_doc_searches_one_document(coffee: Vault) -> None:
    result = tools.grep_doc(coffee, "travel", "oat")
    assert result["doc"] == "travel" and [m["path"] for m in result["matches"]] == ["topics/travel.md"]
    with pytest.raises(NotFound):
        tools.grep_doc(coffee, "no-such-doc", "oat")


def test_list_docs_pages_the_catalog(coffee: Vault) -> None:
    first = tools.list_docs(coffee, limit=2)
    assert first["total"] == 3
    assert [d["id"] for d in first["docs"]] == ["CURRENT", "coffee"]
    assert first["docs"][1]["summary"] == "coffee, oat milk" and first["docs"][1]["tokens"] == 9
    rest = tools.list_docs(coffee, offset=2, limit=2)
    assert [d["id"] for d in rest["docs"]] == ["travel"]
    assert rest["docs"][0]["summary"] == "Kyoto" and rest["docs"][0]["entries"] == 1
    with pytest.raises(FormatError):
        tools.list_docs(coffee, offset=-1)


def test_read_lines_returns_numbered_lines(coffee: Vault) -> None:
    result = tools.read_lines(coffee, "coffee", 6, 7)
    assert [line["line"] for line in result["lines"]] == [6, 7]
    assert result["lines"][0]["text"] == "# Coffee" and result["total_lines"] == 8 and result["next"] is None


def test_read_lines_caps_at_100_lines(vault: Vault) -> None:
    (vault.topics_dir / "big.md").write_text("".join(f"- line {n}\n" for n in range(1, 251)))
    result = tools.read_lines(vault, "big", 1, 250)
    assert len(result["lines"]) == tools.READ_MAX_LINES and result["next"] == 101
    assert tools.read_lines(vault, "big", 240, 999)["end"] == 250


def test_read_lines_rejects_bad_ranges_and_unknown_docs(coffee: Vault) -> None:
    with pytest.raises(NotFound, match="has 8 lines"):
        tools.read_lines(coffee, "coffee", 9)
    with pytest.raises(NotFound):
        tools.read_lines(coffee, "coffee", 0)
    with pytest.raises(FormatError, match="before start"):
        tools.read_lines(coffee, "coffee", 5, 3)
    with pytest.raises(NotFound, match="no document"):
        tools.read_lines(coffee, "nope")


def test_cli_read_doc_range(coffee: Vault, memd) -> None:
    out = memd("read", "coffee:6-7").output
    entry = "- <seq=12,time=2026-11-20T09:12,source=user> Takes coffee with Oat Milk."
    assert out.splitlines() == ["6  # Coffee", f"7  {entry}"]
    data = json.loads(memd("read", "topics/coffee.md:8", "--json").output)
    assert [line["line"] for line in data["lines"]] == [8]
    result = memd("read", "coffee:99", ok=False)
    assert result.exit_code == 1 and "line 99 does not exist" in result.output


def test_cli_grep_prints_path_line(coffee: Vault, memd) -> None:
    out = memd("grep", "decaf", "-C", "0").output
    assert out.strip() == "topics/coffee.md:8:- <seq=13,time=2026-11-21T08:00,source=user> Decaf after 2 pm."
    assert json.loads(memd("grep", "kyoto", "--doc", "travel", "--json").output)["matches"][0]["line"] == 1
    bad = memd("grep", "(a+", ok=False)
    assert bad.exit_code == 1 and "invalid regular expression" in bad.output


def test_cli_list(coffee: Vault, memd) -> None:
    lines = memd("list").output.splitlines()
    assert [line.split()[0] for line in lines] == ["CURRENT", "coffee", "travel"]
    page = json.loads(memd("list", "--offset", "1", "--limit", "1", "--json").output)
    assert [d["id"] for d in page["docs"]] == ["coffee"] and page["total"] == 3
