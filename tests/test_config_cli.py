"""`memd config list|get|set`: effective settings, where each came from,
secrets kept out of the output, and careful edits of .memd/config.toml."""

from __future__ import annotations

import difflib
import json
import tomllib

import pytest
from click.testing import CliRunner

from memd.cli import main
from memd.core.config import SETTINGS, load_config
from memd.core.errors import ConfigError
from memd.vault.vault import Vault

from .conftest import Memd


def settings(memd: Memd) -> dict[str, dict[str, object]]:
    return {s["key"]: s for s in json.loads(memd("config", "list", "--json").output)}


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_list_shows_every_setting_with_the_line_it_comes_from(memd: Memd, vault: Vault) -> None:
    shown = settings(memd)
    assert {spec.key for spec in SETTINGS} <= set(shown)
    assert shown["vault"]["value"] == str(vault.root)
    assert shown["vault"]["source"] == "flag"
    lines = vault.config_path.read_text().splitlines()
    for key in ("consolidate.buffer_tokens", "git.author", "llm.timeout"):
        assert shown[key]["source"] == "vault"
        path, _, line = str(shown[key]["origin"]).rpartition(":")
        assert path == ".memd/config.toml"
        assert lines[int(line) - 1].startswith(key.split(".")[1] + " =")
    assert shown["consolidate.buffer_tokens"]["value"] == 5000
    assert shown["llm.model"] == {**shown["llm.model"], "value": None, "source": "default"}
    assert shown["engine.name"]["value"] == "offline"
    # The test environment sets MEMD_LOCK_TIMEOUT, which beats the file.
    assert shown["vault.lock_timeout"] == {**shown["vault.lock_timeout"], "value": "5s", "source": "env"}

    table = memd("config", "list").output
    assert "consolidate.buffer_tokens" in table and "vault .memd/config.toml:" in table


def test_environment_variables_override_the_file_and_say_so(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    memd("config", "set", "llm.model", "from-file")
    monkeypatch.setenv("MEMD_MODEL", "from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    shown = settings(memd)
    assert shown["llm.model"]["value"] == "from-env"
    assert shown["llm.model"]["origin"] == "MEMD_MODEL"
    assert shown["llm.base_url"]["source"] == "env"
    assert shown["engine.name"]["value"] == "llm"
    result = memd("config", "set", "llm.model", "other")
    assert "MEMD_MODEL is set in this environment and overrides the file" in result.output


@pytest.mark.parametrize(
    ("spec_key", "value", "attribute"),
    [
        ("vault.lock_timeout", "42s", lambda c: c.lock_timeout == 42),
        ("engine.name", "llm", lambda c: c.engine == "llm"),
        ("llm.model", "m-env", lambda c: c.llm.model == "m-env"),
        ("llm.base_url", "http://h:1/v1", lambda c: c.llm.base_url == "http://h:1/v1"),
    ],
)
def test_each_listed_variable_is_the_one_load_config_reads(vault: Vault, spec_key: str, value: str, attribute) -> None:  # type: ignore[no-untyped-def]
    spec = next(s for s in SETTINGS if s.key == spec_key)
    assert spec.env is not None
    env = {spec.env: value, "MEMD_MODEL": "m-env"} if spec.key == "engine.name" else {spec.env: value}
    assert attribute(load_config(vault.config_path, env))
    assert not attribute(load_config(vault.config_path, {}))


def test_the_vault_source_can_be_the_environment(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_VAULT", str(vault.root))
    result = CliRunner().invoke(main, ["config", "get", "vault", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["source"] == "env"


def test_secrets_never_reach_the_output(memd: Memd, vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-1234")
    memd("config", "set", "llm.base_url", "https://me:hunter2@llm.example/v1")
    with vault.config_path.open("a") as file:
        file.write('\n[extra]\napi_key = "pasted-by-mistake"\n')
    listing = memd("config", "list").output + memd("config", "list", "--json").output
    for secret in ("sk-very-secret-1234", "hunter2", "pasted-by-mistake"):
        assert secret not in listing
    shown = settings(memd)
    assert shown["llm.api_key"] == {**shown["llm.api_key"], "value": "<redacted>", "origin": "OPENAI_API_KEY"}
    assert shown["llm.base_url"]["value"] == "https://me:<redacted>@llm.example/v1"
    assert shown["extra.api_key"]["known"] is False
    assert "hunter2" not in memd("config", "set", "llm.base_url", "https://me:hunter2@other/v1").output
    assert "sk-very" not in memd("config", "get", "llm.api_key").output
    refused = memd("config", "set", "llm.api_key", "sk-x", ok=False)
    assert refused.exit_code == 1 and "not stored in the vault" in refused.output


def test_the_api_key_is_read_from_the_variable_the_vault_names(memd: Memd, monkeypatch: pytest.MonkeyPatch) -> None:
    memd("config", "set", "llm.api_key_env", "MY_LLM_KEY")
    assert settings(memd)["llm.api_key"]["value"] is None
    monkeypatch.setenv("MY_LLM_KEY", "k-123")
    assert settings(memd)["llm.api_key"] == {**settings(memd)["llm.api_key"], "value": "<redacted>", "source": "env"}


def test_set_changes_one_line_and_keeps_the_comments(memd: Memd, vault: Vault) -> None:
    before = vault.config_path.read_text()
    memd("config", "set", "consolidate.buffer_tokens", "3000")
    after = vault.config_path.read_text()
    assert changed_lines(before, after) == [
        "-buffer_tokens = 5000    # consolidate when CURRENT.md holds this many tokens",
        "+buffer_tokens = 3000    # consolidate when CURRENT.md holds this many tokens",
    ]
    assert memd("config", "get", "consolidate.buffer_tokens").output == "3000\n"
    assert vault.config.buffer_tokens == 3000


def test_set_uncomments_the_example_line_or_adds_the_key_under_its_table(memd: Memd, vault: Vault) -> None:
    before = vault.config_path.read_text()
    memd("config", "set", "llm.model", "qwen2.5:7b-instruct")
    memd("config", "set", "engine.name", "offline")
    after = vault.config_path.read_text()
    changes = changed_lines(before, after)
    assert changes[0].startswith("-# model = ") and changes[1].startswith('+model = "qwen2.5:7b-instruct"')
    assert changes[1].endswith("# model name; setting it turns the llm engine on; env MEMD_MODEL")
    assert changes[2:] == ["+", "+[engine]", '+name = "offline"']
    data = tomllib.loads(after)
    assert data["llm"]["model"] == "qwen2.5:7b-instruct" and data["engine"] == {"name": "offline"}
    assert vault.config.engine == "offline" and vault.config.llm.model == "qwen2.5:7b-instruct"


def test_set_quotes_strings_safely(memd: Memd, vault: Vault) -> None:
    author = 'Dana "D" O\'Neil <dana@example.com> # not a comment'
    memd("config", "set", "git.author", author)
    assert vault.config.git_author == author
    assert memd("config", "get", "git.author").output == author + "\n"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("consolidate.buffer_tokens", "lots", "must be a whole number"),
        ("consolidate.buffer_tokens", "0", "positive"),
        ("consolidate.buffer_age", "soon", "invalid duration"),
        ("engine.name", "gpt", "offline or llm"),
        ("engine.name", "llm", "needs a model"),
        ("llm.modle", "x", "unknown setting 'llm.modle'"),
        ("llm.timeout", "0s", "llm.timeout must be longer than 0"),
        ("sync.interval", "0", "sync.interval must be longer than 0"),
        ("llm.base_url", "notaurl", "llm.base_url must be an http:// or https:// address"),
        ("llm.base_url", "ftp://models.example", "must be an http:// or https:// address"),
    ],
)
def test_set_refuses_bad_values_and_leaves_the_file_alone(
    memd: Memd, vault: Vault, key: str, value: str, message: str
) -> None:
    before = vault.config_path.read_bytes()
    result = memd("config", "set", key, value, ok=False)
    assert result.exit_code == 1 and message in result.output
    assert vault.config_path.read_bytes() == before


def test_get_an_unknown_key_lists_the_known_ones(memd: Memd) -> None:
    result = memd("config", "get", "buffer_tokens", ok=False)
    assert result.exit_code == 1 and "consolidate.buffer_tokens" in result.output


def test_a_broken_config_file_is_reported_not_half_listed(memd: Memd, vault: Vault) -> None:
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = \n")
    result = memd("config", "list", ok=False)
    assert result.exit_code == 1 and "invalid TOML" in result.output


def test_one_registry_makes_the_default_file_the_typed_config_and_the_listing(memd: Memd, vault: Vault) -> None:
    from memd.core.config import CONFIG_TEMPLATE, Config, parse_config
    from memd.core.settings import SETTINGS

    defaults = parse_config(CONFIG_TEMPLATE, vault.config_path, {})
    assert defaults == Config()  # the generated file says exactly the typed defaults
    listed = {s["key"]: s for s in json.loads(memd("config", "list", "--json").output)}
    for spec in SETTINGS:
        assert spec.key in listed and listed[spec.key]["source"] in ("default", "vault", "env")
        if spec.shown == "line":
            assert f"{spec.name} = " in CONFIG_TEMPLATE and spec.help in CONFIG_TEMPLATE


def test_the_parsed_settings_are_kept_for_the_very_text_they_came_from(vault: Vault) -> None:
    kept = vault.index_dir / "config.json"
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 1234\n")
    assert vault.config.buffer_tokens == 1234 and json.loads(kept.read_text())["raw"]["consolidate"]
    # An edit of the same size, in the same instant, is a different text: parsed again.
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 4321\n")
    assert vault.config.buffer_tokens == 4321
    # What is kept is read only beside its own text: planted tables for another text change nothing.
    kept.write_text(json.dumps({"text": "other", "raw": {"consolidate": {"buffer_tokens": 7}}}))
    assert vault.config.buffer_tokens == 4321
    for damaged in ("{", "[1, 2]", '{"text": 5}'):
        kept.write_text(damaged)
        assert vault.config.buffer_tokens == 4321
    # A value JSON cannot say back (a TOML date) is not kept, and still read.
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 99\n[notes]\nsince = 2026-01-02\n")
    kept.unlink()
    assert vault.config.buffer_tokens == 99 and not kept.exists()
    # Nothing is kept where no vault's folder is.
    elsewhere = vault.root.parent / "elsewhere" / "index" / "config.json"
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = 98\n")
    assert load_config(vault.config_path, cache=elsewhere).buffer_tokens == 98 and not elsewhere.parent.parent.exists()
    # A broken file is reported whatever was kept for it before.
    vault.config_path.write_text("[consolidate]\nbuffer_tokens = \n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(vault.config_path, cache=kept)


def test_lint_names_a_setting_memd_does_not_know(memd: Memd, vault: Vault) -> None:
    # Every command ignores it: a typo in a setting's name otherwise goes unseen.
    text = vault.config_path.read_text()
    assert "\nbuffer_tokens = " in text
    vault.config_path.write_text(text.replace("\nbuffer_tokens = ", "\nbuffer_token = "))
    line = next(n for n, said in enumerate(vault.config_path.read_text().splitlines(), 1) if "buffer_token =" in said)
    lint = memd("lint")  # a warning: lint still passes
    assert (
        f".memd/config.toml:{line}: warning: consolidate.buffer_token is no memd setting; it is ignored "
        "(did you mean consolidate.buffer_tokens?)"
    ) in lint.output


def test_lint_reports_a_config_file_every_command_stops_on(memd: Memd, vault: Vault) -> None:
    lines = vault.config_path.read_text().splitlines()
    vault.config_path.write_text("\n".join([*lines, "buffer_tokens = = 3", ""]))
    lint = memd("lint", ok=False)
    assert lint.exit_code == 1
    assert f".memd/config.toml:{len(lines) + 1}: invalid TOML: Invalid value" in lint.output
    assert "ok: no problems" not in lint.output


def test_a_shared_variable_memd_does_not_need_yet_stops_nothing(
    memd: Memd, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OPENAI_BASE_URL is other tools' too: without a model it is never read, and a bad
    # value is the model call's to report, not a reason for every command to stop.
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:11434/v1")
    assert memd("status").exit_code == 0
    monkeypatch.setenv("MEMD_ENGINE", "banana")
    assert "MEMD_ENGINE (in the environment): engine.name must be offline or llm" in memd("status", ok=False).output
