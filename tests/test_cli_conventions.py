"""The CLI's promises, as the README states them: every error (a usage mistake
too) is one line on stderr with exit code 1; ``--json`` and ``--vault`` work
before or after the subcommand; a rejected value's message says the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memd.cli import main
from memd.vault.vault import Vault

from .conftest import Memd


@pytest.mark.parametrize(
    "args",
    [
        ["add", "a", "b"],  # an extra argument
        ["search"],  # a missing one
        ["search", "x", "--limit", "zero"],  # a bad value
        ["add", "--bogus", "x"],  # an unknown option
        ["--bogus", "status"],  # ... before the subcommand
        ["statsu"],  # no such command
        ["config", "set"],  # in a group's subcommand
    ],
)
def test_every_usage_error_is_one_line_with_exit_code_1(vault: Vault, args: list[str]) -> None:
    result = CliRunner().invoke(main, ["--vault", str(vault.root), *args])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memd: ") and "--help" in lines[0], result.output
    assert "Usage:" not in result.output and "Traceback" not in result.output


def test_every_error_starts_with_memd_as_usage_errors_do(vault: Vault, tmp_path: Path) -> None:
    import subprocess
    import sys

    # A library error through click (a seq no entry holds) ...
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "forget", "999"])
    assert result.exit_code == 1 and result.output.startswith("memd: "), result.output
    # ... through the fast path of a plain `memd add`, which runs without click ...
    launched = subprocess.run(
        [sys.executable, "-m", "memd", "--vault", str(tmp_path / "nowhere"), "add", "x"], capture_output=True, text=True
    )
    assert launched.returncode == 1 and launched.stderr.startswith("memd: "), launched.stderr
    # ... and a door that cannot start: nothing says "Error:".
    assert "Error:" not in result.output + launched.stderr
    # What memd did on its own on the way (a damaged journal set aside) is a note, not an error.
    (vault.meta_dir / "journal").mkdir(exist_ok=True)
    (vault.meta_dir / "journal" / "pending.json").write_text('{"message": 1, "changes": "x"}')
    noted = CliRunner().invoke(main, ["--vault", str(vault.root), "status"])
    assert noted.exit_code == 0 and "note: ignored an unreadable consolidation journal" in noted.output
    assert not [line for line in noted.output.splitlines() if line.startswith("memd: ")]


def test_a_usage_error_in_json_mode_is_a_json_object(vault: Vault) -> None:
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "--json", "add", "a", "b"])
    assert result.exit_code == 1
    error = json.loads(result.output.strip())
    assert error["kind"] == "UsageError" and error["code"] == 1 and "unexpected extra argument" in error["error"]


@pytest.mark.parametrize("order", ["before", "after"])
def test_json_and_vault_go_before_or_after_the_subcommand(vault: Vault, order: str) -> None:
    where = ["--vault", str(vault.root), "--json"]
    args = [*where, "status"] if order == "before" else ["status", *where]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["vault"] == str(vault.root)
    mixed = CliRunner().invoke(main, ["--json", "search", "coffee", "--vault", str(vault.root)])
    assert mixed.exit_code == 0 and json.loads(mixed.output) == []


def test_a_meta_value_a_signature_cannot_hold_is_refused_with_the_fix(memd: Memd) -> None:
    result = memd("add", "--meta", "note=v,with comma", "Takes coffee with oat milk", ok=False)
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "cannot be written in a signature" in result.output and "note=v,with-comma" in result.output
    assert "Takes coffee" not in memd.vault.current.read_text()  # nothing half-written
    bad_key = memd("add", "--meta", "two words=x", "y", ok=False)
    assert bad_key.exit_code == 1 and "meta key 'two words'" in bad_key.output
    # What can be written safely is kept, percent-encoded, and reads back as given.
    [added] = json.loads(memd("add", "--meta", "note=v,w=x>y", "Allergic to peanuts", "--json").output)
    assert "note=v%2Cw%3Dx%3Ey" in added["signature"]
    assert memd("lint").exit_code == 0


def test_the_api_and_mcp_door_refuse_an_unsafe_meta_value_too(vault: Vault) -> None:
    from memd import Memory
    from memd.core.errors import FormatError

    with pytest.raises(FormatError, match="holds no spaces"):
        Memory.open(vault.root).add("x", meta=(("note", "two words"),))


def test_a_file_over_the_size_limit_names_the_option_that_raises_it(memd: Memd, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("x" * (2 * 1024 * 1024), encoding="utf-8")
    result = memd("ingest", str(big), "--max-size", "1", ok=False)
    assert result.exit_code == 1 and "--max-size" in result.output and "too large" in result.output
