"""The everyday commands start fast: ``memd add``, ``memd status`` and
``memd --version`` import neither the search engine (Whoosh), the model
client (openai) nor the MCP SDK, even in a vault with an index and a model;
a plain ``memd add`` imports not even click, git or the sync machinery."""

from __future__ import annotations

import os
import subprocess
import sys

from memd.vault.vault import Vault

from .conftest import REPO, Memd

HEAVY = ("whoosh", "openai", "mcp")
# Runs one command the way the `memd` script does, then lists what was imported.
SCRIPT = f"""
import sys
from memd.cli.launch import main
sys.argv[0] = "memd"
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
print(" ".join(sorted(sys.modules)))
print("heavy modules:", heavy)
"""


def run_script(vault: Vault, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, "--vault", str(vault.root), *args], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def imported_by(vault: Vault, *args: str) -> str:
    return run_script(vault, *args)[-1]


def modules_of(vault: Vault, *args: str) -> set[str]:
    return set(run_script(vault, *args)[-2].split())


def test_add_status_and_version_import_no_search_engine_model_client_or_mcp(memd: Memd) -> None:
    memd("add", "Prefers a flat white coffee in the morning")
    memd("search", "coffee")  # the vault has a search index
    memd("config", "set", "llm.base_url", "http://127.0.0.1:9/v1")  # and a model endpoint
    for command in (["add", "Takes the train on Mondays"], ["status"], ["--version"]):
        assert imported_by(memd.vault, *command) == "heavy modules: []", command


def test_the_check_sees_a_heavy_import(memd: Memd) -> None:
    assert imported_by(memd.vault, "search", "coffee") == "heavy modules: ['whoosh']"


def test_a_plain_add_imports_no_click_git_sync_or_consolidation(memd: Memd) -> None:
    memd("add", "Prefers a flat white coffee in the morning")  # a vault with a buffer and a seq counter
    modules = modules_of(memd.vault, "add", "--source", "hook", "Takes the train on Mondays")
    assert "memd.vault.buffer" in modules  # the add ran here
    for unwanted in ("click", "memd.cli.root", "memd.git.command", "memd.sync.apply", "memd.consolidation.recovery"):
        assert unwanted not in modules, unwanted
    # Nor the secret scanner's library (it imports requests) for text with nothing key-shaped in it.
    assert not {name.split(".")[0] for name in modules} & {"detect_secrets", "requests", "pathspec"}
    assert "Takes the train on Mondays" in memd.vault.current.read_text()
    # Anything the plain reader does not know goes to the full CLI, with the same result.
    assert "click" in modules_of(memd.vault, "add", "--one", "--", "-5 degrees tonight")
    assert "-5 degrees tonight" in memd.vault.current.read_text()


def test_add_and_search_never_load_the_language_pipeline(memd: Memd) -> None:
    memd("add", "Project Heron: migrate the photo archive")
    memd("search", "heron")
    for command in (["add", "Budget for Heron is 2,400 EUR"], ["search", "heron"], ["status"]):
        assert "spacy" not in {name.split(".")[0] for name in modules_of(memd.vault, *command)}, command
    # Consolidation is where it is read.
    assert "spacy" in {name.split(".")[0] for name in modules_of(memd.vault, "consolidate")}


def test_a_search_no_daemon_answers_imports_no_click_and_no_write_path(memd: Memd) -> None:
    memd("add", "Prefers a flat white coffee in the morning")
    memd("search", "coffee")  # the index is built
    lines = run_script(memd.vault, "search", "coffee")
    assert any("flat white coffee" in line for line in lines)  # searched here, in this process
    modules = set(lines[-2].split())
    for unwanted in ("click", "memd.cli.root", "memd.vault.buffer"):
        assert unwanted not in modules, unwanted
    # Asked for something the plain reader does not know, the click command answers as before.
    assert "click" in modules_of(memd.vault, "search", "coffee", "--as-of", "HEAD")
