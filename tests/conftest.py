"""Hermetic tests: every test gets its own HOME, git identity and no MEMD_*/
OPENAI_* settings from the developer's environment."""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memd.app.init import init_vault
from memd.cli import main
from memd.vault.vault import Vault, find_vault

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--all", action="store_true", help="also run the slow tests (always on when CI=true)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A developer's default run stays under a minute; CI and --all run everything.
    if config.getoption("--all") or os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return
    skip = pytest.mark.skip(reason="slow: run with --all (CI runs it)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def heap_unfrozen() -> Iterator[None]:
    """A server run inside a test freezes the heap between its calls (memd/core/heap.py):
    released after each test, so no test's garbage outlives it."""
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(("MEMD_", "OPENAI_")):
            monkeypatch.delenv(name)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("MEMD_LOCK_TIMEOUT", "5s")
    monkeypatch.setenv("MEMD_WARM_SECONDS", "0")  # no search leaves a warm server behind (test_warm.py starts some)
    # memd processes a test starts (the daemon, hooks) run this checkout, not an installed copy.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    """A fresh vault (with git) at tmp_path/vault."""
    return init_vault(tmp_path / "vault").vault


class Memd:
    """Runs the CLI against one vault, like a user typing `memd ...` in it."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, ok: bool = True) -> Result:
        result = self.runner.invoke(main, ["--vault", str(self.vault.root), *args], input=input)
        if ok and result.exit_code != 0:
            raise AssertionError(f"memd {' '.join(args)} failed ({result.exit_code}): {result.output}")
        return result


@pytest.fixture
def memd(vault: Vault) -> Iterator[Memd]:
    yield Memd(vault)


def copy_example(dest: Path) -> Path:
    """Copy the repository's example vault to ``dest``, without what trying it leaves there
    (its index, and a warm search server's socket and lock while it waits for a search)."""
    shutil.copytree(REPO / "vault", dest, ignore=shutil.ignore_patterns("index", "lock", "*.local", "*.sock", "*.lock"))
    return dest


@pytest.fixture
def example(tmp_path: Path) -> Vault:
    """A copy of the repository's example vault."""
    return find_vault(copy_example(tmp_path / "example"))


def snapshot(vault: Vault) -> dict[str, bytes]:
    """Every file of the vault but git's and the derived or machine-local ones, by path."""
    return {
        p.relative_to(vault.root).as_posix(): p.read_bytes()
        for p in sorted(vault.root.rglob("*"))
        if p.is_file()
        and ".git" not in p.parts
        and not {"index", "journal"} & set(p.relative_to(vault.root).parts[:2])
        and p.name != "lock"
    }
