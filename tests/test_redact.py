"""Secret redaction: the rule list, `memd add`, `memd lint`."""

from __future__ import annotations

import pytest

from memd.core.redact import find_secrets, redact
from memd.core.secret_rules import RULES
from memd.vault.vault import Vault

from .conftest import Memd

# Assembled at run time so this file itself never holds a key-shaped string.
KEY_BODY = "Zq81" + "x7KpLm2Vw9RtYb4Nc6Hd"
SAMPLES = [
    ("openai-key", f"use sk-proj-{KEY_BODY}Aa11 here"),
    ("anthropic-key", f"ANTHROPIC sk-ant-api03-{KEY_BODY}"),
    ("github-token", f"token ghp_{KEY_BODY}{KEY_BODY[:16]}"),
    ("aws-access-key", "id AKIA" + "IOSFODNN7EXAMPL3 set"),
    ("slack-token", f"xoxb-1234567890-{KEY_BODY}"),
    ("google-api-key", f"AIza{KEY_BODY}{KEY_BODY[:15]}"),
    ("stripe-key", f"sk_live_{KEY_BODY}"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + KEY_BODY),
    ("bearer-token", f"Authorization: Bearer {KEY_BODY}.{KEY_BODY}"),
    ("url-password", "postgres://app:hunter2pass@db.internal:5432/app"),
    ("credential", "db_password = 'correct horse'"),
    ("credential", '{"client_secret": "s3cr3t-value"}'),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"),
    ("aws-secret-key", "aws_secret_access_key " + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"),
    ("huggingface-token", f"HF_TOKEN is hf_{KEY_BODY}{KEY_BODY[:12]}"),
    ("npm-token", f"publish with npm_{KEY_BODY}{KEY_BODY[:12]}"),
    ("azure-storage-key", f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={KEY_BODY}{KEY_BODY}==;"),
]
# Kinds found by detect-secrets' detectors and the entropy check, behind the same API.
LIBRARY_SAMPLES = [
    ("gitlab-token", f"glpat-{KEY_BODY}"),
    ("sendgrid-key", f"SG.{KEY_BODY[:22]}.{(KEY_BODY * 2)[:43]}"),
    ("twilio-key", "AC" + "a1b2c3d4e5f6a7b8" * 2),
    ("mailchimp-key", "0123456789abcdef" * 2 + "-us12"),
    ("telegram-token", f"123456789:{(KEY_BODY * 2)[:35]}"),
    ("square-key", f"sq0csp-{(KEY_BODY * 2)[:43]}"),
    ("slack-token", f"xoxp-1234-5678-{KEY_BODY.lower()}"),
    ("npm-token", f"//registry.npmjs.org/:_authToken={'0123abcd' * 4}-abc"),
    ("credential", 'connection_secret = "Kx9vQ2wL8mN4pR7t"'),
    ("url-password", "ftp://bob:Pa55word@files.example.org/"),
    ("high-entropy", f"the key we got from the vendor is Qx{KEY_BODY}Rt7Ww"),
]


def test_every_rule_has_a_sample() -> None:
    assert {rule.kind for rule in RULES} == {kind for kind, _ in SAMPLES}


@pytest.mark.parametrize(("kind", "text"), SAMPLES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SAMPLES)])
def test_each_rule_replaces_the_secret_with_its_kind(kind: str, text: str) -> None:
    result = redact(text)
    assert f"[REDACTED:{kind}]" in result.text
    assert kind in result.kinds
    assert find_secrets(result.text) == []  # nothing left to find
    assert redact(result.text).text == result.text  # idempotent


def test_assignments_keep_the_key_and_the_quotes() -> None:
    assert redact("password=hunter22").text == "password=[REDACTED:credential]"
    assert redact('"api_key": "abc123xyz"').text == '"api_key": "[REDACTED:credential]"'
    assert redact("Bearer " + KEY_BODY).text == "Bearer [REDACTED:bearer-token]"


@pytest.mark.parametrize(
    "text",
    [
        f"Prod db password=Tr0ub4dor3xyz and key sk-ant-{KEY_BODY}",
        f"password: correct horse {'AKIA' + 'IOSFODNN7EXAMPL3'} battery staple",
        f"my password is hunter2horse and the token ghp_{KEY_BODY}{KEY_BODY[:16]}",
    ],
)
def test_a_password_on_a_line_with_another_secret_is_redacted_too(text: str) -> None:
    # Each rule runs on what the rules before it left: a passphrase running to the end
    # of its line reached the marker an earlier rule put there and was kept whole.
    result = redact(text)
    for word in ("Tr0ub4dor3xyz", "horse", "staple", "hunter2horse"):
        assert word not in result.text
    assert "credential" in result.kinds and not find_secrets(result.text)
    assert redact(result.text).text == result.text


@pytest.mark.parametrize(
    "text",
    [
        "password: ${DB_PASSWORD}",
        "token = <your token here>",
        "max_tokens: 4096",
        "secret: ***",
        "The password policy changed last week.",
        "We talked about skiing in sk-Alps",  # too short to be a key
    ],
)
def test_placeholders_and_prose_are_left_alone(text: str) -> None:
    assert redact(text).text == text
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password is: hunter2", "hunter2"),
        ("the password for the router is hunter2", "hunter2"),
        ("my pass is hunter2", "hunter2"),
        ("pwd for server: S3cr3t!xyz", "S3cr3t!xyz"),
        ("the password for the office wifi is: Blue-Fox-42", "Blue-Fox-42"),
    ],
)
def test_a_password_said_in_other_words_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text and find_secrets(text)


@pytest.mark.parametrize(
    "text",
    ["Password is required for login", "the pass is open", "my token is ready", "bus pass is 4 euros"],
)
def test_a_password_mentioned_is_no_secret(text: str) -> None:
    assert redact(text).text == text


def test_prose_rules_stay_linear_on_long_lines() -> None:
    # A line of key words and qualifiers must not make the pattern backtrack.
    import time

    text = "the password for " + "the router " * 20_000 + "is"
    started = time.process_time()
    redact(text)
    assert time.process_time() - started < 5.0  # a hang guard: linear is milliseconds


def test_find_secrets_reports_lines() -> None:
    text = "first line\nkey: sk-" + KEY_BODY + "\nthird password=abcd1234"
    assert find_secrets(text) == [(2, "openai-key"), (3, "credential")]


def test_memd_add_never_writes_a_secret(memd: Memd, vault: Vault) -> None:
    key = f"sk-proj-{KEY_BODY}"
    memd("add", f"The deploy key is {key}")
    text = vault.current.read_text()
    assert key not in text
    assert "The deploy key is [REDACTED:openai-key]" in text


def test_a_src_with_a_password_is_redacted_once_and_linked_once(memd: Memd, vault: Vault) -> None:
    # memd links an entry's src with its brackets %-encoded: that marker read as a
    # password, was redacted again as "typed into the buffer", and a second link followed.
    memd("add", "--src", "https://bob:pw123@example.com/page", "the wiki page")
    consolidated = memd("consolidate").output
    assert "possible secret" not in consolidated
    lines = [line for path in vault.topic_files() for line in path.read_text().splitlines()]
    [entry] = [line for line in lines if line.startswith("- <seq=") and "wiki" in line]
    assert "pw123" not in entry and entry.count("[source](") == 1
    assert memd("lint").exit_code == 0


def test_lint_flags_a_secret_typed_by_hand(memd: Memd, vault: Vault) -> None:
    (vault.topics_dir / "servers.md").write_text(
        '---\nid: servers\nsummary: "x"\n---\n# Servers\n- <seq=1> login password=Tr0ub4dor&3\n'
    )
    result = memd("lint", ok=False)
    assert result.exit_code == 1
    assert "topics/servers.md:6: possible secret (credential)" in result.output


@pytest.mark.parametrize(("kind", "text"), SAMPLES)
def test_a_message_to_a_model_is_redacted_and_stays_json(kind: str, text: str) -> None:
    import json

    from memd.engine.outgoing import redacted

    payload = {"entries": [f"note: {text}", 'he said "hi" \\ back'], "count": 3}
    system = {"role": "system", "content": "You file entries."}
    sent = redacted([system, {"role": "user", "content": json.dumps(payload)}, {"role": "user", "content": text}])
    assert sent[0] is not system and sent[0] == system  # nothing to redact: sent as it was
    data = json.loads(sent[1]["content"])
    assert data["count"] == 3 and data["entries"][1] == 'he said "hi" \\ back'
    assert f"[REDACTED:{kind}]" in data["entries"][0] and f"[REDACTED:{kind}]" in sent[2]["content"]
    assert not find_secrets(sent[1]["content"]) and not find_secrets(sent[2]["content"])


@pytest.mark.parametrize(("kind", "text"), LIBRARY_SAMPLES, ids=[k for k, _ in LIBRARY_SAMPLES])
def test_the_maintained_rule_set_finds_what_memds_own_rules_lack(kind: str, text: str) -> None:
    result = redact(text)
    assert f"[REDACTED:{kind}]" in result.text, result.text
    assert not find_secrets(result.text) and redact(result.text).text == result.text


@pytest.mark.parametrize(
    "text",
    [
        f"token_ghp_{KEY_BODY}{KEY_BODY[:16]}",
        "export_AKIA" + "QWERTYUIOPASDFGH.md",
        f"notes/sk-proj-{KEY_BODY}Aa11.md",
        f"deploy-glpat-{KEY_BODY}",
        f"my_hf_{KEY_BODY}{KEY_BODY[:12]}",
    ],
)
def test_a_key_embedded_after_an_underscore_dash_or_slash_is_found(text: str) -> None:
    result = redact(text)
    assert result.findings and "[REDACTED:" in result.text
    assert find_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "- <seq=999999999,time=2026-01-01T00:00:00Z,source=user> Took the 7:42 train",
        "commit 3f2a9c1e0b7d4a6f8e2c5b9d1a3f7e0c2b4d6a8f fixed it",  # a git hash
        "id 123e4567-e89b-12d3-a456-426614174000 in the log",  # a UUID
        "see src/memd/consolidation/ConsolidationRunner2024.py",  # a path, an identifier
        "https://www.example.com/watch?v=dQw4w9WgXcQ&t=42s",
        "TopicIndexBackgroundSnapshotVersion2",
        'api_key_env = "OPENAI_API_KEY"',  # where the key is, not the key
        "The AWS console was slow; secret Santa is on Friday.",
    ],
)
def test_ordinary_words_hashes_seqs_and_paths_are_left_alone(text: str) -> None:
    assert redact(text).text == text
    assert find_secrets(text) == []


def test_the_example_vault_holds_no_secret() -> None:
    # False positives measured on the repository's example vault: none.
    from .conftest import REPO

    files = sorted((REPO / "vault").rglob("*.md"))
    assert files
    assert {path.name: find_secrets(path.read_text()) for path in files} == {path.name: [] for path in files}


def test_a_long_informal_conversation_holds_no_secret() -> None:
    # False positives measured on the bench's informal chat (156,000 characters of
    # everyday talk, names, dates and places): none.
    from .conftest import REPO

    text = (REPO / "bench" / "data" / "informal-chat" / "informal-chat.json").read_text()
    assert len(text) > 100_000 and find_secrets(text) == []


def test_the_library_is_imported_only_for_a_text_that_may_hold_a_key() -> None:
    import subprocess
    import sys

    prose = [
        "Prefers a flat white coffee in the morning",
        "Read https://example.com/some-long-path-name/about-the-laws-of-jaws today",
        "my private key is on the old laptop; e.g. msg. from non-us people",
        'Prefers a key lime pie with "extra" cream',
    ]
    script = (
        f"import sys; from memd.core.redact import redact; [redact(t) for t in {prose!r}];"
        "print('detect_secrets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_library_rules_stay_linear_on_long_lines() -> None:
    import time

    started = time.process_time()
    for text in (
        "eyJ" + "a" * 200_000,
        ("password" + '"' * 3) * 30_000,
        "//x/" * 50_000 + ":_authToken=",
        "Ab1" * 100_000,
    ):
        redact(text)
    assert time.process_time() - started < 10.0  # a hang guard: linear is well under a second


def test_a_file_of_entries_read_again_is_read_only_where_it_changed_and_its_secrets_still_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memd.core import redact as module

    monkeypatch.setattr(module, "_CLEAN", set())
    head = "# Garden\n"
    entries = [f"- <seq={n},time=2026-05-0{n}T09:00:00Z,source=user> planted row {n} of garlic" for n in range(1, 6)]
    assert module.redact_entries(head + "\n".join(entries) + "\n").findings == ()
    read: list[str] = []
    real = module.find_secrets
    monkeypatch.setattr(module, "find_secrets", lambda text: read.append(text) or real(text))
    more = "- <seq=6,time=2026-05-06T09:00:00Z,source=user> watered the garlic"
    grown = head + "\n".join([*entries, more]) + "\n"
    assert module.redact_entries(grown).text == grown
    assert read == [entries[-1] + "\n" + more + "\n"]  # the old last entry lost its newline: read again, with the new
    key = "- <seq=7,time=2026-05-07T09:00:00Z,source=user> the shed code is AKIAIOSFODNN7EXAMPLE"
    leaked = module.redact_entries(head + "\n".join([*entries, more, key]) + "\n", keep_lines=True)
    assert [finding.kind for finding in leaked.findings] and "AKIAIOSFODNN7EXAMPLE" not in leaked.text
    assert leaked.text.startswith(head + "\n".join([*entries, more]) + "\n- <seq=7,")
