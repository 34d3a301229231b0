"""Secrets never reach git, the index or a file name, whichever door they
come through: `memd add` (text, --meta, --src), `memd ingest` (content,
conversation titles, file names), or a hand edit while the daemon runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from memd.daemon.status import read_status, running_pid
from memd.vault.vault import Vault

from .conftest import REPO, Memd
from .exports import chatgpt
from .test_daemon_e2e import wait_for

# Assembled at run time so this file itself never holds a key-shaped string.
BODY = "Zq81" + "x7KpLm2Vw9RtYb4Nc6Hd"
OPENAI = f"sk-proj-{BODY}Aa11"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPL3"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB = f"ghp_{BODY}{BODY[:16]}"
URL_PASSWORD = "hunter2pass"
PASSWORD = "Tr0ub4dor&3zz"
PHRASE = "correct horse battery staple"
PEM_LINES = [
    "-----BEGIN RSA " + "PRIVATE KEY-----",
    f"MIIEowIBAAKCAQEA{BODY}",
    f"{BODY}qr8Yv3Ww",
    "-----END RSA PRIVATE KEY-----",
]
SECRETS = [OPENAI, AWS_ID, AWS_SECRET, GITHUB, URL_PASSWORD, PASSWORD, PHRASE, *PEM_LINES[1:3]]


def tokens(secret: str) -> list[str]:
    """How an index keeps a secret: lowercase words (the long ones only: a
    word like "horse" is no secret by itself)."""
    return [t for t in re.findall(r"[a-z0-9]+", secret.lower()) if len(t) >= 6]


def git_objects(vault: Vault) -> bytes:
    """Every object in the repository, reachable or not, decompressed."""
    out = subprocess.run(
        ["git", "-C", str(vault.root), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    )
    return out.stdout


def test_no_secret_reaches_git_the_index_or_a_file_name(
    memd: Memd, vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the daemon process runs this checkout's memd
    # memd add: text, extra keys, src, one PEM line per entry, prose.
    memd(
        "add",
        f"The deploy key is {OPENAI}",
        "--meta",
        f"api_key={OPENAI}",
        "--meta",
        f"password={PASSWORD}",
        "--src",
        f"https://bob:{URL_PASSWORD}@git.example.org/infra",
    )
    memd("add", input="\n".join(PEM_LINES) + "\n")
    memd("add", f"The AWS secret is {AWS_SECRET} and the id {AWS_ID}")
    memd("add", f"My password is {PASSWORD}")
    memd("add", f"password: {PHRASE}")
    # memd ingest: content, a conversation title, a file name.
    note = tmp_path / f"keys-{AWS_ID}.md"
    note.write_text(f"Server notes.\n\nThe token for the CI is {GITHUB}.\n\nmy password is {PHRASE}\n")
    memd("ingest", str(note))
    chat = tmp_path / "conversations.json"
    chat.write_text(
        json.dumps(chatgpt({"ci": [("user", "We rotate the keys on Friday.")]}, {"ci": f"CI token {GITHUB}"}))
    )
    memd("ingest", str(chat))

    # A hand edit while the daemon runs: held, reported, never committed.
    memd("daemon", "start", "--quiet", "0.5")
    pid = running_pid(vault)
    try:
        held = vault.topics_dir / "servers.md"
        held.write_text(
            '---\nid: servers\nsummary: "servers"\n---\n# Servers\n'
            f"- The OpenAI key is {OPENAI}\n- aws_access_key_id = {AWS_ID}\n"
            f"- aws_secret_access_key = {AWS_SECRET}\n" + "".join(f"  {line}\n" for line in PEM_LINES)
        )
        (vault.root / "people").mkdir()
        (vault.root / "people" / "sam.md").write_text("# Sam\n\nSam likes quince jam.\n")
        wait_for(
            lambda: "topics/servers.md" in ((read_status(vault) or {}).get("held_files") or {}),
            60,  # a hang guard: the daemon holds it within a second or two
            "the daemon to hold the file with secrets",
        )
        wait_for(
            lambda: (
                "people/sam.md"
                in subprocess.run(
                    ["git", "-C", str(vault.root), "log", "--format=%s"], capture_output=True, text=True
                ).stdout
            ),
            60,
            "the clean edit beside it to be committed",
        )
        assert "topics/servers.md" in memd("search", "servers").stdout  # indexed, but redacted
        reasons = (read_status(vault) or {})["held_files"]["topics/servers.md"]
        assert any("possible secret (openai-key)" in r for r in reasons)
        daemon_log = (vault.meta_dir / "logs" / "daemon.log").read_text()
        assert "not committing topics/servers.md" in daemon_log
        memd("daemon", "stop")
    finally:
        if pid is not None and running_pid(vault) is not None:
            os.kill(pid, signal.SIGKILL)

    objects = git_objects(vault)
    index = b"".join(p.read_bytes() for p in vault.index_dir.rglob("*") if p.is_file()).lower()
    names = "\n".join(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*")).lower()
    for secret in SECRETS:
        assert secret.encode() not in objects, f"{secret} is in a git object"
        for token in tokens(secret):
            assert token.encode() not in index, f"{token} (of {secret}) is in the index"
            assert token not in names, f"{token} (of {secret}) is in a file name"
    assert memd("verify").output.startswith("ok:")


def test_a_held_file_is_released_when_the_person_commits_it(vault: Vault) -> None:
    from memd.daemon.handler import Handler

    class Clock:
        now = 1000.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    handler = Handler(vault, clock=clock, debounce=0.1, quiet=1.0, check_every=1.0, rescan_every=3600.0)
    handler.start()
    held = vault.topics_dir / "servers.md"
    held.write_text(f"# Servers\n- The OpenAI key is {OPENAI}\n")
    handler.notice(str(held))
    for _ in range(5):
        clock.now += 1.0
        handler.run_due()
    assert "topics/servers.md" in handler.held
    assert OPENAI.encode() not in git_objects(vault)
    # The person decides it is fine and commits it; memd lets go and consolidates again.
    subprocess.run(["git", "-C", str(vault.root), "add", "topics/servers.md"], check=True)
    subprocess.run(["git", "-C", str(vault.root), "commit", "-qm", "mine"], check=True)
    clock.now += 2.0
    handler.run_due()
    assert handler.held == {}
    assert (read_status(vault) or handler.book.data)["held_files"] == {}


@pytest.mark.parametrize("secret", [GITHUB, OPENAI, AWS_ID, f"password: {PASSWORD}"])
def test_a_secret_typed_into_current_md_never_reaches_a_commit(memd: Memd, vault: Vault, secret: str) -> None:
    memd("add", "Takes coffee with oat milk")
    with vault.current.open("a") as current:
        current.write(f"- token for the fine github repo {secret}\n")  # typed by hand, no daemon running
    result = memd("consolidate")
    assert "possible secret" in result.output and "CURRENT.md:" in result.output
    objects = git_objects(vault)
    for part in tokens(secret if not secret.startswith("password") else PASSWORD):
        assert part.encode() not in objects
        assert all(part not in p.name.lower() for p in vault.topics_dir.iterdir())
    assert "[REDACTED:" in "".join(p.read_text() for p in vault.topic_files())
    assert json.loads(memd("verify", "--json").output)["ok"]
    memd("add", "Runs on Tuesdays")  # every later command still works
    memd("consolidate")


@pytest.mark.parametrize("secret", [GITHUB, AWS_ID])
def test_a_secret_typed_into_a_topic_is_committed_by_no_path(tmp_path: Path, secret: str) -> None:
    from .sync_helpers import bare_remote, first_device

    remote = bare_remote(tmp_path)
    memd = first_device(tmp_path, remote)
    memd("add", "Takes coffee with oat milk")
    memd("consolidate")
    [topic] = memd.vault.topic_files()
    with topic.open("a") as edited:
        edited.write(f"- the deploy key is {secret}\n")  # typed by hand into a topic, no daemon running
    memd("add", "Runs on Tuesdays by the river")

    result = memd("consolidate")  # commits the person's other edits and files the buffer

    rel = memd.vault.rel(topic)
    assert f"not committing {rel}: {rel}:" in result.output and "possible secret" in result.output
    assert secret in topic.read_text()  # left as the person wrote it, for them to decide
    refused = memd("sync", ok=False)
    assert refused.exit_code == 1 and f"cannot sync: not committing {rel}" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    for part in tokens(secret):
        assert part.encode() not in git_objects(memd.vault)
        assert (
            part.encode()
            not in subprocess.run(
                ["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch"], capture_output=True
            ).stdout
        )
    assert json.loads(memd("verify", "--json").output)["ok"]

    topic.write_text(topic.read_text().replace(secret, "[removed]"))  # the person takes it out
    memd("sync")  # now it goes through
    committed = subprocess.run(["git", "-C", str(memd.vault.root), "show", f"HEAD:{rel}"], capture_output=True)
    assert b"[removed]" in committed.stdout


@pytest.mark.slow
def test_no_secret_typed_by_hand_reaches_a_model(memd: Memd, vault: Vault) -> None:
    from .model_server import ScriptedModel

    with ScriptedModel() as server:
        vault.config_path.write_text(
            f'[llm]\nbase_url = "{server.url}"\nmodel = "scripted"\nmax_retries = 0\ntimeout = "2s"\ngating = "off"\n'
        )
        memd("add", "Takes coffee with oat milk\nRuns the Lisbon half marathon in March")
        memd("consolidate")
        for topic in vault.topic_files():
            with topic.open("a") as edited:
                edited.write(f"- the deploy key is {OPENAI}, the backup one {GITHUB}\n")  # typed by hand
        with vault.current.open("a") as edited:
            edited.write(f"- my password is {PASSWORD}\n")  # typed by hand into the buffer
        memd("consolidate", "--dry-run")
        memd("add", "Prefers a flat white coffee in the morning")
        memd("consolidate")
        memd("ask", "What is the deploy key?")
        assert {"rewrite", "agent_step"} <= set(server.operations())
        sent = json.dumps(server.requests, ensure_ascii=False)
    assert "the deploy key is [REDACTED:openai-key]" in sent
    for secret in (OPENAI, GITHUB, PASSWORD):
        for part in tokens(secret):
            assert part not in sent.lower(), secret
