"""Files where people put them: every Markdown file is memory, links are not,
slugs are safe file names everywhere, and turn links open in Obsidian."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memd.core.layout import WINDOWS_RESERVED, classify, ignored
from memd.daemon.handler import Handler
from memd.engine.text import slugify
from memd.ingest import ingest_file
from memd.ingest.sources import locate
from memd.vault.vault import Vault

from .conftest import Memd

SAM = "# Sam\n\nSam's birthday is on the ninth of March; he likes quince jam.\n- unsigned list item about quince\n"
UNTITLED = "Borrowed the ladder from the neighbours at number 12, give it back by Friday.\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def git(vault: Vault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True).stdout


def notes(vault: Vault) -> None:
    (vault.root / "people").mkdir()
    (vault.root / "people" / "sam.md").write_text(SAM)
    (vault.root / "Untitled.md").write_text(UNTITLED)


def test_notes_at_the_root_and_in_a_folder_are_found_everywhere(memd: Memd, vault: Vault) -> None:
    notes(vault)
    assert "people/sam.md" in memd("search", "quince").stdout
    assert "Untitled.md" in memd("search", "ladder").stdout
    assert "people/sam.md:3:" in memd("grep", "birthday").stdout
    assert "Untitled.md" in memd("grep", "ladder").stdout
    listed = memd("list").stdout
    assert "people/sam.md" in listed and "Untitled.md" in listed
    answer = json.loads(memd("ask", "when is Sam's birthday?", "--json").stdout)
    assert any("people/sam.md" in json.dumps(item) for item in answer.get("evidence", [])), answer
    assert memd("lint").exit_code == 0
    assert "people/sam.md" in memd("show", "people/sam.md").stdout or SAM in memd("show", "people/sam.md").stdout


def test_a_note_is_committed_as_a_hand_edit_and_never_adopted(vault: Vault) -> None:
    clock = Clock()
    handler = Handler(vault, clock=clock, debounce=0.5, quiet=3.0, check_every=5.0, rescan_every=3600.0)
    handler.start()
    notes(vault)
    handler.notice(str(vault.root / "people" / "sam.md"))
    handler.notice(str(vault.root / "Untitled.md"))
    for _ in range(3):
        clock.now += 2.0
        handler.run_due()
    subject, author = git(vault, "log", "-1", "--format=%s|%an").strip().split("|")
    assert subject.startswith("edit:") and "people/sam.md" in subject and "Untitled.md" in subject
    assert author == "Test User"
    assert git(vault, "show", "HEAD:people/sam.md") == SAM  # exactly what the person wrote: nothing adopted
    assert (vault.root / "people" / "sam.md").read_text() == SAM
    assert git(vault, "status", "--porcelain") == ""


def test_ignored_notes_are_not_memory(memd: Memd, vault: Vault) -> None:
    vault.config_path.write_text(
        vault.config_path.read_text().replace(
            'lock_timeout = "10s"', 'lock_timeout = "10s"\nignore = ["templates/", "*.excalidraw.md"]'
        )
    )
    (vault.root / "templates").mkdir()
    (vault.root / "templates" / "daily.md").write_text("# Daily template zebrafinch\n")
    (vault.root / "sketch.excalidraw.md").write_text("zebrafinch drawing\n")
    (vault.root / "kept.md").write_text("zebrafinch sighting in the garden\n")
    hits = memd("search", "zebrafinch").stdout
    assert "kept.md" in hits and "templates/daily.md" not in hits and "excalidraw" not in hits
    assert ignored("a/templates/x.md", ["templates/"]) and not ignored("templates.md", ["templates/"])
    assert ignored("private/2024/x.md", ["private/2024/*"]) and not ignored("x/private/2024/y.md", ["private/2024/*"])


def test_tool_folders_and_the_inbox_are_not_memory() -> None:
    for rel in (".obsidian/x.md", ".git/x.md", ".memd/x.md", "inbox/x.md", "inbox/done/x.md", ".trash/x.md"):
        assert classify(rel) in (None, "inbox"), rel


@given(
    st.sampled_from(["", ".", "~$", "#", "sub/", "../", "a\\"]),
    st.text(alphabet="ab.-_ ", max_size=6),
    st.sampled_from([".md", ".MD", ".markdown", ".md~", ".md.swp", ".txt", ""]),
)
def test_a_file_in_topics_is_judged_by_the_general_rules(prefix: str, stem: str, suffix: str) -> None:
    # The common shape is judged by a shortcut; a leading slash takes the general route.
    name = prefix + stem + suffix
    assert classify(f"topics/{name}") == classify(f"/topics/{name}")


@given(st.text(max_size=40))
def test_a_slug_is_never_a_name_windows_reserves(text: str) -> None:
    slug = slugify(text)
    assert slug.split(".")[0] not in WINDOWS_RESERVED
    assert slug == slug.strip("-") and not any(c in slug for c in '<>:"/\\|?* .')


def test_reserved_names_and_other_scripts_make_safe_readable_slugs() -> None:
    assert [slugify(t) for t in ("aux", "NUL", "Con", "com1", "LPT9")] == [
        "aux-1",
        "nul-1",
        "con-1",
        "com1-1",
        "lpt9-1",
    ]
    assert slugify("東京の天気") == "東京の天気"
    assert slugify("Привет мир") == "привет-мир"
    assert slugify("Café au lait") == "cafe-au-lait"
    assert slugify("my password is Tr0ub4dor&3zz") == "my-password-is"


def test_topics_and_sources_never_get_a_reserved_name(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    memd("add", "aux")
    memd("add", "咖啡 很好喝")  # two notes the model cannot read, sharing a word: a topic named by it
    memd("add", "咖啡 太贵了")
    memd("consolidate")
    names = {p.stem for p in vault.topic_files()}
    assert not names & WINDOWS_RESERVED
    assert any("咖啡" in name for name in names), names
    note = tmp_path / "con.md"
    note.write_text("The con of the boat is the steering position.\n")
    result = ingest_file(vault, note)
    assert Path(result.source).stem not in WINDOWS_RESERVED


def test_turn_links_are_obsidian_block_ids_and_old_anchors_still_resolve(vault: Vault, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "The boiler is serviced in March.\nBy Bob."}]))
    result = ingest_file(vault, chat)
    [entry] = vault.read(vault.current).signed()
    src = entry.entry.signature.src if entry.entry.signature else ""
    assert src == f"{result.source}#^t1"
    copy = (vault.root / result.source).read_text()
    assert "- **User**: The boiler is serviced in March.\n  By Bob. ^t1\n" in copy
    assert locate(vault, src) == (
        result.source,
        copy.splitlines().index("- **User**: The boiler is serviced in March.") + 1,
    )
    old = vault.sources_dir / "old.md"
    old.write_text('---\noriginal: "x"\n---\n\n# x\n\n- <a id="t1"></a>**Ana**: hello\n- <a id="t2"></a>**Bo**: hi\n')
    assert locate(vault, "sources/old.md#t2") == ("sources/old.md", 8)
    assert locate(vault, "D1:2;sources/old.md#t2") == ("sources/old.md", 8)
