"""`memd log --since DATE --limit N`: the memory's history from a date, newest first."""

from __future__ import annotations

import json
import os
import subprocess

from .conftest import Memd


def hand_edit(memd: Memd, name: str, when: str) -> None:
    """A person writes a topic and commits it themselves, on ``when``."""
    (memd.vault.topics_dir / f"{name}.md").write_text(f"# {name}\n\n- {name} was written by hand\n")
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    root = str(memd.vault.root)
    subprocess.run(["git", "-C", root, "add", f"topics/{name}.md"], check=True, env=env)
    subprocess.run(["git", "-C", root, "commit", "-qm", f"edit: topics/{name}.md"], check=True, env=env)


def subjects(memd: Memd, *args: str) -> list[str]:
    return [commit["subject"] for commit in json.loads(memd("log", "--json", *args).output)]


def test_log_since_a_date_with_a_limit(memd: Memd) -> None:
    hand_edit(memd, "winter", "2026-01-15T10:00:00Z")
    hand_edit(memd, "spring", "2026-04-15T10:00:00Z")
    hand_edit(memd, "summer", "2026-07-15T10:00:00Z")

    assert subjects(memd, "--since", "2026-04-01") == ["edit: topics/summer.md", "edit: topics/spring.md"]
    assert subjects(memd, "--since", "2026-04-01", "--limit", "1") == ["edit: topics/summer.md"]
    assert subjects(memd, "--since", "2026-07-15T11:00Z") == []
    assert "edit: topics/winter.md" in subjects(memd)
    refused = memd("log", "--since", "last spring", ok=False)
    assert refused.exit_code == 1 and refused.output.startswith("memd: invalid time 'last spring'")
