"""`memd add` as hooks and scripts run it: the plain command line is read
without click, and gives what the click command gives; anything else goes to
the click command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memd.cli.launch import AddRequest, parse_add
from memd.vault.vault import Vault

from .conftest import Memd


def memd_process(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``memd ARGS`` as its own process, the way the installed script runs it."""
    return subprocess.run([sys.executable, "-m", "memd", *args], input=stdin, capture_output=True, text=True, cwd=cwd)


def without_times(text: str) -> str:
    return re.sub(r"time=[0-9TZ:-]+", "time=T", text)


@pytest.mark.parametrize(
    ("args", "request_"),
    [
        (["add", "Flat white"], AddRequest("Flat white")),
        (["--vault", "/v", "add", "x", "--json"], AddRequest("x", vault="/v", as_json=True)),
        (["--json", "add", "x", "--vault=/v"], AddRequest("x", vault="/v", as_json=True)),
        (
            ["add", "--one", "--time", "2026-11-02", "--source=hook", "--src", "a.md#L3", "--meta", "k=v", "x"],
            AddRequest("x", one=True, when="2026-11-02", source="hook", src="a.md#L3", meta=(("k", "v"),)),
        ),
    ],
)
def test_a_plain_add_is_read_here(args: list[str], request_: AddRequest) -> None:
    assert parse_add(args) == request_


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["add", "--help"],
        ["-h", "add", "x"],
        ["add", "x", "--bogus"],
        ["add", "two", "texts"],
        ["add", "--", "-5 degrees"],
        ["add", "--source", "-x", "y"],
        ["add", "y", "--time"],
        ["add", "y", "--meta", "novalue"],
        ["add", "y", "--meta", "seq=4"],
        ["add", "y", "--meta", "source=me"],
        ["add", "y", "--meta", "k=two words"],
        ["--one", "add", "y"],
    ],
)
def test_anything_else_goes_to_the_click_command(args: list[str]) -> None:
    assert parse_add(args) is None


def test_the_process_prints_what_the_click_command_prints(memd: Memd, tmp_path: Path) -> None:
    clicked = memd("add", "Ran 5 km along the river\nthen 2 km home", "--source", "hook")
    done = memd_process(
        "--vault", str(memd.vault.root), "add", "Ran 5 km along the river\nthen 2 km home", "--source=hook"
    )
    assert done.returncode == 0, done.stderr
    lines = [re.sub(r"CURRENT\.md:\d+: <seq=\d+", "<seq", without_times(line)) for line in done.stdout.splitlines()]
    expected = [
        re.sub(r"CURRENT\.md:\d+: <seq=\d+", "<seq", without_times(line)) for line in clicked.output.splitlines()
    ]
    assert lines == expected and len(lines) == 2
    assert done.stdout.splitlines()[0].startswith("CURRENT.md:")

    as_json = memd_process("--vault", str(memd.vault.root), "--json", "add", "--one", "a\nb")
    [entry] = json.loads(as_json.stdout)
    assert entry["text"] == "a\nb" and entry["path"] == "CURRENT.md" and entry["seq"] == 5
    assert "source=user> a\n  b\n" in memd.vault.current.read_text()


def test_standard_input_and_errors_as_the_click_command_gives_them(vault: Vault) -> None:
    piped = memd_process("--vault", str(vault.root), "add", "--source", "hook", stdin="one\n\ntwo\n")
    assert piped.returncode == 0 and len(piped.stdout.splitlines()) == 2

    empty = memd_process("--vault", str(vault.root), "add", "   ")
    assert (empty.returncode, empty.stdout, empty.stderr) == (1, "", "Error: nothing to add: the text is empty\n")
    problem = json.loads(memd_process("--vault", str(vault.root), "add", "--json", "").stderr)
    assert problem == {"error": "nothing to add: the text is empty", "kind": "FormatError", "code": 1}

    missing = memd_process("--vault", str(vault.root / "nowhere"), "add", "x")
    assert missing.returncode == 1 and missing.stderr.startswith("Error: ") and "nowhere" in missing.stderr
    assert "Traceback" not in missing.stderr

    bad_meta = memd_process("--vault", str(vault.root), "add", "x", "--meta", "seq=4")
    assert bad_meta.returncode == 1
    assert bad_meta.stderr.startswith("memd: invalid value for --meta: seq is assigned by memd")  # click's message
