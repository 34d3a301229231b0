"""A vault with a past, for the history review tests: a month of one
person's memory, built through memd itself on a real git repository.

  09-01  C1  coffee notes and Dana's phone number are filed
  09-10  C2  a new phone number supersedes the old one in its topic; of two
             statements about Dana's car, the newer supersedes the older while
             both are still in the buffer
  09-15  E   the person edits a coffee note by hand (oat milk -> soy milk)
  09-20  C3  garden notes start a topic
  09-25  C4  more garden notes: the topic grows past split_tokens and splits
  09-28  C5  small topics merge (the engine is told which two)
  10-02  C6  a baking note starts a topic of its own

Building takes a few seconds, so it happens once per test module into a
template; each test gets its own copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memd.app.init import init_vault
from memd.consolidation.run import Outcome, consolidate
from memd.engine.offline import OfflineEngine
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.vault import Vault

COFFEE = ["Takes coffee with oat milk", "Prefers a flat white coffee in the morning", "Drinks decaf coffee after 2pm"]
OLD_PHONE = "Dana's phone number is 555-0101"
NEW_PHONE = "Dana's phone number is 555-0199"
OLD_CAR = "Dana's car is a red Volvo"
NEW_CAR = "Dana's car is a blue Tesla"
GARDEN_1 = [
    "Tomato seedlings go out after the last frost",
    "Pinch the side shoots off the tomato plants",
    "Basil grows best next to the tomatoes",
    "Harvest basil leaves from the top",
]
GARDEN_2 = [
    "Tomatoes need a stake and weekly feeding",
    "Tomato plants want deep watering twice a week",
    "Basil hates cold nights below ten degrees",
    "Basil pesto needs pine nuts and garlic",
]
TOMATO_MORE = "Tomato plants need a stake, weekly feeding and deep watering"
BREAD = "Bakes sourdough bread on weekends"
DAYS = {"C1": "09-01", "C2": "09-10", "E": "09-15", "C3": "09-20", "C4": "09-25", "C5": "09-28", "C6": "10-02"}


@dataclass
class Story:
    root: Path
    commits: dict[str, str] = field(default_factory=dict)  # label -> sha
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seqs: dict[str, int] = field(default_factory=dict)  # text -> seq

    def copy(self, target: Path) -> Vault:
        shutil.copytree(self.root, target, symlinks=True)
        return Vault(target)


class MergeTheTomatoTopics(OfflineEngine):
    """The offline engine, except that it picks which small topics merge (its
    own similarity rule decides that from word statistics; the test needs a
    merge it can name)."""

    def merge_groups(self, topics: list, limit_tokens: int, background: object = None) -> list[list[str]]:  # type: ignore[type-arg]
        tomato = sorted((t for t in topics if "tomato" in t.text.lower()), key=lambda t: (-t.tokens, t.id))
        return [[tomato[0].id, tomato[1].id]] if len(tomato) >= 2 else []


def when(day: str) -> str:
    return f"2026-{day}T10:00:00Z"


def build(root: Path) -> Story:
    story = Story(root)
    with pytest.MonkeyPatch.context() as env:
        home = root.parent / "story-home"
        home.mkdir()
        gitconfig = home / ".gitconfig"
        gitconfig.write_text("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
        for name in list(os.environ):
            if name.startswith(("MEMD_", "OPENAI_")):
                env.delenv(name)
        env.setenv("HOME", str(home))
        env.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
        env.setenv("GIT_CONFIG_NOSYSTEM", "1")

        def at(label: str) -> None:
            for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "MEMD_NOW"):
                env.setenv(name, when(DAYS[label]))

        def add(*texts: str) -> None:
            for added in append_entries(vault, [NewEntry(t) for t in texts]):
                story.seqs[added.text] = added.seq

        def run(label: str, **kwargs: object) -> None:
            outcome = consolidate(vault, **kwargs)  # type: ignore[arg-type]
            assert outcome.commit, outcome
            story.outcomes[label] = outcome
            story.commits[label] = outcome.commit

        at("C1")
        vault = init_vault(root).vault
        vault.config_path.write_text("[consolidate]\nsplit_tokens = 40\nmerge_tokens = 10\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "settings: small topics")
        add(*COFFEE, OLD_PHONE)
        run("C1")
        at("C2")
        add(NEW_PHONE, OLD_CAR, NEW_CAR)
        run("C2")
        at("E")
        [coffee] = [p for p in vault.topic_files() if "coffee" in p.name]
        coffee.write_text(coffee.read_text().replace("oat milk", "soy milk"))
        git(root, "commit", "-qam", f"edit: {vault.rel(coffee)}")
        story.commits["E"] = git(root, "rev-parse", "HEAD").strip()
        at("C3")
        add(*GARDEN_1)
        run("C3")
        at("C4")
        add(*GARDEN_2)
        run("C4")
        at("C5")
        vault.config_path.write_text("[consolidate]\nsplit_tokens = 200\nmerge_tokens = 1000\n")
        add(TOMATO_MORE)
        run("C5", engine=MergeTheTomatoTopics())
        at("C6")
        add(BREAD)
        run("C6")
    return story


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout
