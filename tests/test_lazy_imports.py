"""The everyday commands start fast: ``memd add``, ``memd status`` and
``memd --version`` import neither the search engine (Whoosh), the model
client (openai) nor the MCP SDK, even in a vault with an index and a model."""

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
from memd.cli import main
try:
    main(sys.argv[1:], prog_name="memd")
except SystemExit as done:
    assert not done.code, done.code
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
print("heavy modules:", heavy)
"""


def imported_by(vault: Vault, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, "--vault", str(vault.root), *args], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1]


def test_add_status_and_version_import_no_search_engine_model_client_or_mcp(memd: Memd) -> None:
    memd("add", "Prefers a flat white coffee in the morning")
    memd("search", "coffee")  # the vault has a search index
    memd("config", "set", "llm.base_url", "http://127.0.0.1:9/v1")  # and a model endpoint
    for command in (["add", "Takes the train on Mondays"], ["status"], ["--version"]):
        assert imported_by(memd.vault, *command) == "heavy modules: []", command


def test_the_check_sees_a_heavy_import(memd: Memd) -> None:
    assert imported_by(memd.vault, "search", "coffee") == "heavy modules: ['whoosh']"
