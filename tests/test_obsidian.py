"""The vault is an Obsidian vault: what memd writes must look right there.

Obsidian reads YAML frontmatter as *properties* (text, number, checkbox,
date, list; no nested objects, no anchors), renders the body as CommonMark
(a signature `<seq=...>` must stay visible text, not vanish as an HTML tag),
reads `#word` at a line start as a tag rather than a heading, and keeps its
own settings in `.obsidian/`, which memd must never touch.
"""

from __future__ import annotations

import html
import re
import subprocess
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from memd.vault.vault import Vault

from .conftest import REPO, Memd, copy_example

SCALARS = (str, bool, int, float, date, datetime)
LIST_PROPERTIES = ("tags", "aliases", "cssclasses")  # Obsidian's own properties are lists of text
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_SIGNATURE = re.compile(r"^\s*[-*+] (<seq=[^>\s]*>)")
_WIKILINK = re.compile(r"\[\[([^\[\]]*)\]\]")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, as Obsidian's property editor does."""


def _no_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys = [loader.construct_object(k) for k, _ in node.value]
    duplicates = sorted({str(k) for k in keys if keys.count(k) > 1})
    if duplicates:
        raise yaml.constructor.ConstructorError(None, None, f"duplicate keys {duplicates}", node.start_mark)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    lines = text.split("\n")
    if lines[0] != "---":
        return None, text
    for number, line in enumerate(lines[1:], start=1):
        if line in ("---", "..."):
            return "\n".join(lines[1:number]), "\n".join(lines[number + 1 :])
    return "", text  # opened, never closed: reported by the caller


def frontmatter_problems(rel: str, text: str) -> list[str]:
    if text.startswith("\ufeff"):
        return [f"{rel}: starts with a byte-order mark; Obsidian would not see the properties"]
    yaml_text, _ = split_frontmatter(text)
    if yaml_text is None:
        return []
    if yaml_text == "" and text.split("\n")[0] == "---" and "\n---" not in text[3:]:
        return [f"{rel}: frontmatter is never closed"]
    for event in yaml.parse(yaml_text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            return [f"{rel}: frontmatter uses YAML anchors or aliases, which Obsidian does not support"]
    try:
        data = yaml.load(yaml_text, Loader=_StrictLoader)
    except yaml.YAMLError as err:
        return [f"{rel}: frontmatter is not valid YAML: {err}"]
    if data is None:
        return []
    if not isinstance(data, dict):
        return [f"{rel}: frontmatter is not a mapping of properties"]
    problems = []
    for key, value in data.items():
        where = f"{rel}: property {key!r}"
        if not isinstance(key, str):
            problems.append(f"{where}: keys must be text")
        elif key in LIST_PROPERTIES and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            problems.append(f"{where}: Obsidian expects a list of text")
        elif isinstance(value, list):
            if not all(isinstance(item, SCALARS) for item in value):
                problems.append(f"{where}: a list may hold only text, numbers or dates")
        elif not isinstance(value, SCALARS):
            problems.append(f"{where}: {type(value).__name__} is not a property type Obsidian shows")
    return problems


def body_problems(rel: str, body: str) -> list[str]:
    problems = []
    rendered = MarkdownIt("commonmark").render(body)
    headings = {t.map[0] for t in MarkdownIt("commonmark").parse(body) if t.type == "heading_open" and t.map}
    fenced = False
    for number, line in enumerate(body.split("\n")):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        where = f"{rel} (body line {number + 1})"
        if re.match(r"^#{1,6}[^#\s]", line):
            problems.append(f"{where}: {line[:30]!r} has no space after #, so Obsidian reads a tag, not a heading")
        elif re.match(r"^#{1,6}(\s|$)", line) and (not line.strip("# \t") or number not in headings):
            problems.append(f"{where}: empty or malformed heading {line!r}")
        signature = _SIGNATURE.match(line)
        if signature and html.escape(signature.group(1), quote=False) not in rendered:
            problems.append(f"{where}: signature {signature.group(1)} does not render as visible text")
        for target in _WIKILINK.findall(line):
            name = target.split("|", 1)[0].split("#", 1)[0].strip()
            if not name and not target.startswith("#"):
                problems.append(f"{where}: wikilink [[{target}]] has no target")
        if line.count("[[") != line.count("]]"):
            problems.append(f"{where}: unbalanced wikilink brackets")
    if "<seq" in rendered:
        problems.append(f"{rel}: a signature rendered as an HTML tag and would be hidden")
    return problems


def vault_markdown(root: Path) -> list[Path]:
    files = [root / "CURRENT.md"] if (root / "CURRENT.md").exists() else []
    for folder in ("topics", "sources"):
        files += sorted(p for p in (root / folder).rglob("*.md") if not p.name.startswith("."))
    return files


def obsidian_problems(root: Path) -> tuple[list[str], int]:
    """Every problem Obsidian would have with the vault, and how many signatures were checked."""
    problems: list[str] = []
    signatures = 0
    for path in vault_markdown(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        problems += frontmatter_problems(rel, text)
        _, body = split_frontmatter(text)
        problems += body_problems(rel, body)
        signatures += sum(1 for line in body.split("\n") if _SIGNATURE.match(line))
    return problems, signatures


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_example_vault_is_what_obsidian_expects() -> None:
    problems, signatures = obsidian_problems(REPO / "vault")
    assert problems == []
    assert signatures >= 10
    assert not (REPO / "vault" / ".obsidian").exists()


@pytest.fixture
def consolidated(memd: Memd, vault: Vault) -> Vault:
    """A vault filled with `memd add` and `memd consolidate`, opened in Obsidian beforehand."""
    settings = vault.root / ".obsidian"
    (settings / "snippets").mkdir(parents=True)
    (settings / "app.json").write_text('{"alwaysUpdateLinks": true}\n')
    (settings / "snippets" / "zebra-notes.md").write_text("- zebra crossing notes kept by a plugin\n")
    memd("add", "Takes coffee with oat milk, never sugar; 50% strength")
    memd("add", "Allergic to peanuts (confirmed by doctor) -> carries an EpiPen", "--meta", "confidence=high")
    memd("add", "--time", "2026-11-01", "Runs 10 km every Sunday with the #running club, see [[running]]")
    trip = "Kyoto trip 2027-04-03 to 2027-04-12 = cherry blossoms\nwith Sam, first four nights in a ryokan"
    memd("add", "--one", trip)
    memd("add", "--source", "ai", "Dana prefers aisle seats on long flights")
    memd("consolidate")
    memd("add", "Takes coffee with oat milk, and now a little honey")
    memd("consolidate")
    return vault


def test_memd_never_writes_reads_or_commits_obsidian_settings(consolidated: Vault, memd: Memd) -> None:
    settings = consolidated.root / ".obsidian"
    before = snapshot(settings)
    memd("reindex")
    assert memd("search", "zebra", "--json").output.strip() == "[]"
    assert memd("grep", "zebra", "--json").output.count('"path"') == 0
    memd("lint")
    assert (
        snapshot(settings)
        == before
        == {
            "app.json": b'{"alwaysUpdateLinks": true}\n',
            "snippets/zebra-notes.md": b"- zebra crossing notes kept by a plugin\n",
        }
    )
    committed = subprocess.run(
        ["git", "-C", str(consolidated.root), "log", "--name-only", "--format="], capture_output=True, text=True
    ).stdout
    assert "topics/" in committed and ".obsidian" not in committed


def test_a_consolidated_vault_is_what_obsidian_expects(consolidated: Vault) -> None:
    assert consolidated.topic_files()
    problems, signatures = obsidian_problems(consolidated.root)
    assert problems == []
    assert signatures >= 6


def test_consolidated_signatures_and_headings_render_visibly(consolidated: Vault) -> None:
    # The part of the check above that does not depend on the frontmatter bug.
    checked = 0
    for path in vault_markdown(consolidated.root):
        rel = path.relative_to(consolidated.root).as_posix()
        _, body = split_frontmatter(path.read_text(encoding="utf-8"))
        assert body_problems(rel, body) == []
        checked += sum(1 for line in body.split("\n") if _SIGNATURE.match(line))
    assert checked >= 6


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nid: a\nid: b\n---\n# A\n", "not valid YAML"),
        ("---\nid: a\nmeta:\n  nested: 1\n---\n", "dict is not a property type"),
        ("---\na: 2026-01-01\n&x b: *x\n---\n", "anchors or aliases"),
        ("---\ntags: running\n---\n", "Obsidian expects a list of text"),
        ("---\nlog:\n  - {a: 1}\n---\n", "a list may hold only"),
        ("\ufeff---\nid: a\n---\n", "byte-order mark"),
        ("---\nid: a\n", "never closed"),
        ("#Coffee\n- <seq=1> x\n", "Obsidian reads a tag"),
        ("- <span>not a signature</span>\n- <seq=1,source=user> fine [[]]\n", "has no target"),
        ("- <seq=1> see [[coffee\n", "unbalanced wikilink"),
    ],
)
def test_the_checks_catch_what_obsidian_would_trip_on(tmp_path: Path, text: str, problem: str) -> None:
    copy_example(tmp_path / "v")
    (tmp_path / "v" / "topics" / "broken.md").write_text(text, encoding="utf-8")
    problems, _ = obsidian_problems(tmp_path / "v")
    assert len(problems) == 1 and problem in problems[0], problems


def source_links(path: Path) -> list[str]:
    """The targets of the `[source](…)` links of a file, as a CommonMark renderer reads them."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    found = []
    for token in tokens:
        children = token.children or []
        for at, child in enumerate(children):
            if child.type == "link_open" and at + 1 < len(children) and children[at + 1].content == "source":
                found.append(str(child.attrGet("href")))
    return found


def test_src_is_a_link_that_opens_the_source_from_current_and_from_topics(
    memd: Memd, vault: Vault, tmp_path: Path
) -> None:
    note = tmp_path / "atlas standup.md"
    note.write_text("# Standup\n\nDana moved the Atlas cut-over to Friday.\n\nSam owns the rollback plan for Atlas.\n")
    memd("ingest", str(note))
    memd("add", "--src", "https://example.org/atlas?id=7", "Atlas has a status page")
    memd("add", "--src", "D1:3", "An id is no place a link could open")

    def opened(path: Path) -> list[str]:
        targets = source_links(path)
        for target in targets:
            if not target.startswith("https://"):
                assert (path.parent / target.split("#", 1)[0]).resolve().is_file(), target
        return targets

    links = opened(vault.current)
    assert any(t.startswith("sources/") for t in links) and "https://example.org/atlas?id=7" in links
    assert len(links) == 3  # the two lines of the note, the web address; never the id
    for located in vault.read(vault.current).signed():
        assert "[source]" not in located.entry.text  # the link is not the entry's words

    memd("consolidate")
    assert memd("verify").exit_code == 0
    filed = [t for path in vault.topic_files() for t in opened(path)]
    assert sorted(t.removeprefix("../") for t in filed) == sorted(links)
    assert all(t.startswith(("../sources/", "https://")) for t in filed)
    assert memd("search", "rollback", "--json").output.count("[source]") == 0


def test_topics_link_to_related_topics_and_carry_their_title_as_an_alias(memd: Memd, vault: Vault) -> None:
    for text in (
        "Priya moved the Atlas cut-over to Friday",
        "Priya owns the Atlas rollback plan and the Atlas runbook",
        "The Atlas dashboards move to Grafana after the cut-over",
        "Dana takes her coffee with oat milk",
        "Dana is allergic to peanuts and carries an EpiPen",
        "Dana and Priya had lunch at the Thai place near the office",
        "Priya is vegetarian and loves Thai curry",
    ):
        memd("add", text)
    memd("consolidate")
    topics = {path.stem: vault.read(path) for path in vault.topic_files()}
    assert len(topics) >= 2
    links = {}
    for topic_id, document in topics.items():
        assert document.frontmatter is not None
        data = document.frontmatter.data
        assert document.title() in data["aliases"]  # [[its title]] opens it
        links[topic_id] = [_WIKILINK.fullmatch(link).group(1) for link in data.get("related", [])]  # type: ignore[union-attr]
        assert all(target in topics and target != topic_id for target in links[topic_id])
    # The Atlas topic and the one about Dana and Priya's lunches share Priya.
    assert any(links.values())
    problems, _ = obsidian_problems(vault.root)
    assert problems == []


def test_a_persons_own_tags_and_aliases_stay_and_related_is_memds() -> None:
    from memd.consolidation.related import with_links

    mine = {"id": "t", "tags": ["mine"], "aliases": "My own name", "related": ["[[gone]]"]}
    data = with_links(mine, "Atlas — cut-over", ["dana"], ["priya"])
    assert data["tags"] == ["mine", "priya"]
    assert data["aliases"] == ["My own name", "Atlas — cut-over"]
    assert data["related"] == ["[[dana]]"]
    assert "related" not in with_links(mine, None, [], [])
    assert with_links(data, "Atlas — cut-over", ["dana"], ["priya"]) == data  # nothing added twice


def test_a_hand_made_topic_whose_sections_are_level_one_headings_gets_none_as_its_alias(
    memd: Memd, vault: Vault
) -> None:
    (vault.topics_dir / "atlas.md").write_text(
        "---\nid: atlas\n---\n# People\n"
        "- <seq=1,time=2026-10-10T10:00,source=user> Priya Raman leads the Atlas billing migration\n\n"
        "# Deadlines\n- <seq=2,time=2026-10-11T10:00,source=user> The Atlas cut-over moved to 8 December\n"
    )
    memd("add", "Priya asked Dana to demo the Atlas invoice replay tool")
    memd("consolidate")
    data = vault.read(vault.topics_dir / "atlas.md").frontmatter.data  # type: ignore[union-attr]
    assert "People" not in data.get("aliases", [])  # [[People]] must not open the Atlas topic
