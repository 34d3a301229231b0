"""One secret gate in front of git: whichever way a key enters the vault (`memd
add`, its --meta and --src, a hand edit of CURRENT.md or of a topic, a signed
line typed at the end of CURRENT.md, `memd ingest` of a file holding it or named
after it, a commit message, a commit a person made with git), no commit holds it
and `memd sync` never sends it to the remote.

Every kind of key below goes through every door, and the checks read all of git:
every object (reachable or not), every file name in every commit, every message,
and the bare repository that plays the remote."""

from __future__ import annotations

import random
import string
import subprocess
from pathlib import Path

import pytest

from memd.vault.vault import Vault

from .conftest import Memd
from .sync_helpers import bare_remote, git

pytestmark = pytest.mark.slow  # a dozen vaults, each with thirty keys through one door

_ALNUM = string.ascii_letters + string.digits


def _random(kind: str, size: int, alphabet: str = _ALNUM) -> str:
    """A random body, the same on every run, assembled here so this file holds no key."""
    rng = random.Random(kind)
    return "".join(rng.choice(alphabet) for _ in range(size))


def _keys() -> dict[str, tuple[str, str]]:
    """kind -> (the key as it is pasted, the part of it that must never reach git)."""
    low = string.ascii_lowercase + string.digits
    hexd = "0123456789abcdef"
    body = {kind: _random(kind, 64) for kind in ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m")}
    keys: dict[str, str] = {
        "openai": "sk-" + "proj-" + body["a"][:40],
        "anthropic": "sk-" + "ant-api03-" + body["b"][:40],
        "github-classic": "gh" + "p_" + body["c"][:36],
        "github-oauth": "gh" + "o_" + body["d"][:36],
        "github-fine-grained": "github" + "_pat_" + body["e"][:22] + "_" + body["e"][22:59],
        "github-server": "gh" + "s_" + body["c"][20:56],
        "gitlab-personal": "gl" + "pat-" + body["f"][:20],
        "gitlab-runner": "gl" + "rt-" + body["f"][30:56],
        "gitlab-deploy": "gl" + "dt-" + body["g"][:24],
        "aws-access-key": "AK" + "IA" + _random("aws", 16, string.ascii_uppercase + string.digits),
        "aws-temporary-key": "AS" + "IA" + _random("asia", 16, string.ascii_uppercase + string.digits),
        "stripe-test": "sk" + "_test_" + body["i"][30:56],
        "slack-user": "xo" + "xp-" + "4" * 11 + "-" + "5" * 12 + "-" + body["h"][30:56],
        "slack-bot": "xo" + "xb-" + "2" * 11 + "-" + "3" * 12 + "-" + body["h"][:24],
        "stripe-live": "sk" + "_live_" + body["i"][:24],
        "stripe-restricted": "rk" + "_live_" + body["j"][:24],
        "twilio-sid": "A" + "C" + _random("twilio", 32, low),
        "twilio-key": "S" + "K" + _random("twiliokey", 32, low),
        "sendgrid": "S" + "G." + body["k"][:22] + "." + body["k"][22:64] + "x",
        "npm": "np" + "m_" + body["l"][:36],
        "huggingface": "h" + "f_" + body["m"][:34],
        "google-api": "AI" + "za" + _random("google", 35),
        "jwt": "ey"
        + "JhbGciOiJIUzI1"
        + "NiIsInR5cCI6IkpXVCJ9."
        + "ey"
        + "JzdWIiOiIx"
        + "MjM0NTY3ODkwIn0."
        + _random("jwt", 43),
        "azure-storage": "Account" + "Key=" + _random("azure", 86) + "==",
        "pypi": "pypi-" + "AgEIcHlwaS5vcmc" + _random("pypi", 72),
        "square": "sq0" + "csp-" + _random("square", 43),
        "discord": "M" + _random("discord", 23) + "." + _random("discord2", 6) + "." + _random("discord3", 27),
        "mailchimp": _random("mailchimp", 32, hexd) + "-us" + "12",
        "high-entropy": _random("entropy", 40),
        "aws-secret": _random("awssecret", 20) + "/" + _random("awssecret2", 19),
        "telegram": "1234" + "56789:" + _random("telegram", 35),
        "basic-auth": "https://deploy:" + _random("basic", 18) + "@git.example.org/infra",
    }
    needles: dict[str, str] = {}
    for kind, key in keys.items():
        if kind == "azure-storage":
            needles[kind] = key[len("AccountKey=") + 20 : len("AccountKey=") + 40]
        elif kind == "basic-auth":
            needles[kind] = key.split(":")[2].split("@")[0]
        elif kind == "aws-secret":
            needles[kind] = key[:20]
        else:
            needles[kind] = key[-16:]
    return {kind: (key, needles[kind]) for kind, key in keys.items()}


KEYS = _keys()
# Keys that can be a file name (no slash, no colon).
NAMEABLE = {kind: pair for kind, pair in KEYS.items() if "/" not in pair[0] and ":" not in pair[0]}
SAID = {  # how a person writes each one down: prose for most, the key name for the ones that need it
    "aws-secret": "aws_secret_access_key = {}",
}


def said(kind: str) -> str:
    key = KEYS[kind][0]
    return SAID.get(kind, "the {} key for the deploy is {}").format(*([kind, key] if kind not in SAID else [key]))


def test_there_are_enough_kinds() -> None:
    assert len(KEYS) >= 25 and len(NAMEABLE) >= 25


# -- what git and the remote hold -------------------------------------------------------------


def everything_in(repo: Path) -> str:
    """Every object in a repository (reachable or not), every file name in every
    commit and every message, as one text."""
    objects = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")
    names = git(repo, "log", "--all", "--name-only", "--format=%B") if git(repo, "rev-parse", "--all").strip() else ""
    patches = git(repo, "log", "--all", "-p", "--format=%B") if names else ""
    return "\n".join([objects, names, patches])


def leaked(repo: Path, kinds: dict[str, tuple[str, str]] = KEYS) -> list[str]:
    held = everything_in(repo)
    return [kind for kind, (_, needle) in kinds.items() if needle in held]


def with_remote(tmp_path: Path, vault: Vault) -> Path:
    remote = bare_remote(tmp_path)
    git(vault.root, "remote", "add", "origin", str(remote))
    return remote


def synced(memd: Memd, remote: Path) -> None:
    """`memd sync` ran (it may refuse, naming what it holds back); the remote holds no key."""
    memd("sync", ok=False)
    assert leaked(remote) == []


def synced_clean(memd: Memd, vault: Vault, remote: Path) -> None:
    """A sync after which no key is in any git object here or on the remote, and the vault verifies."""
    memd("sync")
    assert leaked(vault.root) == [] and leaked(remote) == []
    assert memd("verify").output.startswith("ok:")


# -- the doors --------------------------------------------------------------------------------


def test_memd_add_text(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    memd("add", "\n".join(said(kind) for kind in KEYS))
    memd("consolidate")
    synced(memd, remote)
    assert leaked(vault.root) == []
    assert memd("verify").output.startswith("ok:")


def test_memd_add_meta_and_src(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    for kind, (key, _) in KEYS.items():
        memd("add", f"a note about {kind}", "--meta", f"ref={key}", "--src", f"https://example.org/{key}")
    memd("consolidate")
    synced(memd, remote)
    assert leaked(vault.root) == []


def test_a_hand_edit_of_current_md(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    memd("add", "Deploys go out on Tuesdays")
    memd("sync")
    text = vault.current.read_text()
    edited = text.replace("Deploys go out on Tuesdays", "Deploys go out on Tuesdays; " + "; ".join(map(said, KEYS)))
    vault.current.write_text(edited)
    synced(memd, remote)  # held: a remote keeps what it is sent
    assert leaked(vault.root) == []
    out = memd("consolidate").output  # the buffer's secrets are redacted before anything is committed
    assert "redacted" in out
    synced_clean(memd, vault, remote)


def test_a_signed_line_typed_at_the_end_of_current_md(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    memd("add", "Deploys go out on Tuesdays")
    memd("sync")
    with vault.current.open("a") as buffer:
        for n, kind in enumerate(KEYS, start=900):
            buffer.write(f"- <seq={n},time=2026-01-01T00:00:00Z,source=user> {said(kind)}\n")
    result = memd("sync", ok=False)
    assert result.exit_code != 0 and "CURRENT.md:" in result.output and "possible secret" in result.output
    assert leaked(vault.root) == [] and leaked(remote) == []
    memd("consolidate")
    synced_clean(memd, vault, remote)


def test_a_hand_edit_of_a_topic(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    memd("add", "Deploys go out on Tuesdays")
    memd("consolidate")
    [topic] = vault.topic_files()
    topic.write_text(topic.read_text() + "".join(f"- {said(kind)}\n" for kind in KEYS))
    out = memd("consolidate").output
    assert f"not committing {vault.rel_of(topic)}" in out
    memd("add", "Deploys are frozen in December")
    memd("consolidate")  # memd's own commit of the topic, if it writes it, carries no key
    synced(memd, remote)
    assert leaked(vault.root) == [] and leaked(remote) == []


def test_memd_ingest_of_a_file_holding_keys(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    note = tmp_path / "deploy-notes.md"
    note.write_text("# Deploy notes\n\n" + "\n\n".join(said(kind) for kind in KEYS) + "\n")
    memd("ingest", str(note))
    memd("consolidate")
    synced(memd, remote)
    assert leaked(vault.root) == [] and leaked(remote) == []
    assert "[REDACTED:" in next(vault.sources_dir.rglob("*.md")).read_text()


def test_memd_ingest_of_files_named_after_keys(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    inputs = tmp_path / "in"
    inputs.mkdir()
    for kind, (key, _) in NAMEABLE.items():
        for name in (f"{key}.md", f"export_{key}.md", f"notes-{key}.md"):
            (inputs / name).write_text(f"# Notes\n\nThe {kind} notes say the deploy is on Tuesday.\n")
    memd("ingest", *sorted(str(p) for p in inputs.iterdir()))
    memd("consolidate")
    synced(memd, remote)
    assert leaked(vault.root, NAMEABLE) == [] and leaked(remote, NAMEABLE) == []
    names = "\n".join(p.name for p in vault.root.rglob("*"))
    assert [kind for kind, (_, needle) in NAMEABLE.items() if needle in names] == []


def test_a_note_or_folder_named_after_a_key_is_held_not_committed(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    for kind, (key, _) in NAMEABLE.items():
        folder = vault.root / "people" / f"team-{key}"
        folder.mkdir(parents=True)
        (folder / "sam.md").write_text(f"# Sam\n\nSam runs the {kind} deploys.\n")
        (vault.root / "people" / f"{key}.md").write_text("# Notes\n\nnothing secret in here\n")
    (vault.root / "people" / "ok.md").write_text("# Ok\n\nA clean note beside them.\n")
    out = memd("consolidate").output
    assert "its name holds a possible secret" in out
    synced(memd, remote)
    assert leaked(vault.root, NAMEABLE) == [] and leaked(remote, NAMEABLE) == []
    assert "people/ok.md" in git(vault.root, "log", "--name-only", "--format=")


def test_a_commit_message_never_carries_a_key(vault: Vault) -> None:
    from memd.git.log import commit_as_memd

    (vault.root / "people").mkdir()
    (vault.root / "people" / "sam.md").write_text("# Sam\n")
    message = "notes: " + "; ".join(said(kind) for kind in KEYS)
    sha, note = commit_as_memd(vault, message, {"people/sam.md": b"# Sam\n\n" + said("openai").encode() + b"\n"})
    assert sha is not None and note is None
    assert leaked(vault.root) == []
    assert "[REDACTED:" in git(vault.root, "log", "-1", "--format=%B")


def test_sync_refuses_a_commit_a_person_made_with_git(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    remote = with_remote(tmp_path, vault)
    memd("add", "Deploys go out on Tuesdays")
    memd("sync")
    notes = vault.root / "people" / "ops.md"
    notes.parent.mkdir()
    notes.write_text("# Ops\n\nclean line\n" + "".join(f"{said(kind)}\n" for kind in KEYS))
    git(vault.root, "add", "people/ops.md")
    git(vault.root, "commit", "-q", "-m", "ops notes")
    result = memd("sync", ok=False)
    assert result.exit_code == 1
    assert "cannot push: commit " in result.output and "people/ops.md:4: possible secret" in result.output
    assert leaked(remote) == []
    # The person rewrites their commit without the keys: sync goes on.
    notes.write_text("# Ops\n\nclean line\n")
    git(vault.root, "commit", "-q", "--amend", "-a", "-m", "ops notes")
    memd("sync")
    assert leaked(remote) == []
    assert "people/ops.md" in git(remote, "log", "--name-only", "--format=")
