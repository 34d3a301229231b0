"""`memd init --from` brings the vault that is on the remote, whatever its branch
is called, and `memd sync` follows the branch the vault tracks (real git, bare
remotes in tmp_path)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner, Result

from memd.app.init import init_vault
from memd.cli import main
from memd.sync.branches import Branch, BranchChoice, choose
from memd.vault.vault import Vault

from .conftest import Memd
from .sync_helpers import add, bare_remote, git, json_of, live, verify_ok


def init_from(tmp_path: Path, url: Path, name: str, *more: str, ok: bool = True) -> Result:
    result = CliRunner().invoke(main, ["init", str(tmp_path / name), "--from", str(url), *more])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def vault_pushed_as(tmp_path: Path, remote: Path, name: str, branch: str) -> Memd:
    """A vault made with `memd init` on a local `master`, pushed to ``branch``
    with plain git (no upstream recorded), as a person would."""
    vault = init_vault(tmp_path / name).vault
    git(vault.root, "branch", "-m", "master")  # git's default where init.defaultBranch is unset
    # Two vaults made in the same second are one commit; on two machines they never are.
    git(vault.root, "commit", "-q", "--amend", "-m", f"init: memd vault on {name}")
    git(vault.root, "remote", "add", "origin", str(remote))
    git(vault.root, "push", "-q", "origin", f"HEAD:{branch}")
    return Memd(vault)


def remote_branches(remote: Path) -> list[str]:
    return git(remote, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()


def sync_facts(memd: Memd) -> dict[str, object]:
    facts: dict[str, object] = json_of(memd("status", "--json").output)["sync"]
    return facts


def test_a_vault_pushed_as_main_is_cloned_though_the_remotes_head_names_master(tmp_path: Path) -> None:
    """The sequence of issue 31: both vaults then sync both ways on `main`."""
    remote = bare_remote(tmp_path)
    git(remote, "symbolic-ref", "HEAD", "refs/heads/master")
    a = vault_pushed_as(tmp_path, remote, "a", "main")
    from_a = [f"a wrote note {n} about the garden" for n in range(12)]
    from_b = [f"b wrote note {n} about the kitchen" for n in range(12)]
    add(a, *from_a[:6])

    result = init_from(tmp_path, remote, "b")

    assert "cloned the vault on branch main" in result.output and "created" not in result.output
    b = Memd(Vault((tmp_path / "b").resolve()))
    assert git(b.vault.root, "rev-parse", "--abbrev-ref", "main@{upstream}").strip() == "origin/main"
    add(b, *from_b[:6])
    b("sync")
    followed = a("sync")  # a tracks no branch and the remote has no `master`: it follows main, its history's
    assert "following origin/main, which holds this vault's history" in followed.output
    add(a, *from_a[6:])
    add(b, *from_b[6:])
    b("sync")
    a("sync")
    b("sync")

    assert remote_branches(remote) == ["main"]
    for memd in (a, b):
        words = live(memd.vault)  # fails on a seq live twice
        texts = sorted(words.values())
        assert texts == sorted(from_a + from_b), memd.vault.root.name
        verify_ok(memd)
        facts = sync_facts(memd)
        assert facts["remote"] == "origin/main" and facts["tracked"] is True
        assert facts["ahead"] == facts["behind"] == 0
    assert live(a.vault) == live(b.vault)
    assert "remote      origin/main: 0 ahead, 0 behind" in a("status").output


def test_a_remote_holding_two_unrelated_vaults_stops_the_clone_and_lists_them(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    vault_pushed_as(tmp_path, remote, "first", "main")
    vault_pushed_as(tmp_path, remote, "second", "master")  # the remote's HEAD names it, still not guessed

    result = init_from(tmp_path, remote, "clone", ok=False)

    assert result.exit_code == 1
    assert "2 unrelated memd vaults" in result.output and "main; master" in result.output
    assert f"memd init PATH --from {remote} --branch NAME" in result.output
    assert not (tmp_path / "clone").exists()
    assert remote_branches(remote) == ["main", "master"]


def test_branch_picks_which_vault_to_clone(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    first = vault_pushed_as(tmp_path, remote, "first", "main")
    add(first, "only in the first vault")
    first("sync", "--branch", "main")
    vault_pushed_as(tmp_path, remote, "second", "master")

    result = init_from(tmp_path, remote, "clone", "--branch", "main", "--json")

    cloned = json_of(result.output)
    assert cloned["branch"] == "main" and cloned["created"] is False
    clone = Memd(Vault((tmp_path / "clone").resolve()))
    assert list(live(clone.vault).values()) == ["only in the first vault"]
    assert git(clone.vault.root, "branch", "--format=%(refname:short)").split() == ["main"]  # no stray master
    assert sync_facts(clone)["remote"] == "origin/main"
    missing = init_from(tmp_path, remote, "other", "--branch", "trunk", ok=False)
    assert missing.exit_code == 1 and "has no branch 'trunk' (its branches: main, master)" in missing.output
    assert not (tmp_path / "other").exists()


def test_an_empty_remote_gets_a_new_vault_on_the_branch_asked_for(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    result = init_from(tmp_path, remote, "laptop", "--branch", "trunk")
    assert "created a new vault" in result.output and "shared as its trunk" in result.output
    assert remote_branches(remote) == ["trunk"]
    laptop = Memd(Vault((tmp_path / "laptop").resolve()))
    add(laptop, "first words")
    laptop("sync")
    desktop_says = init_from(tmp_path, remote, "desktop")  # the remote's HEAD names no branch: trunk is its vault
    assert "cloned the vault on branch trunk" in desktop_says.output
    assert "first words" in (tmp_path / "desktop" / "CURRENT.md").read_text(encoding="utf-8")


def test_branch_needs_from(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "v"), "--branch", "main"])
    assert result.exit_code == 1 and "--branch goes with --from" in result.output
    assert not (tmp_path / "v").exists()


def test_sync_names_a_remote_holding_two_unrelated_vaults_and_how_to_follow_its_own(tmp_path: Path) -> None:
    """What an older memd left behind: a second vault pushed as `master` beside the real one on `main`."""
    remote = bare_remote(tmp_path)
    a = vault_pushed_as(tmp_path, remote, "a", "main")
    add(a, "a's words")
    stray = vault_pushed_as(tmp_path, remote, "stray", "master")
    stray("sync")
    before = git(remote, "for-each-ref")

    stopped = a("sync", ok=False)  # a's local branch is master: it has been following the stray vault

    assert stopped.exit_code == 1
    assert "two unrelated memd vaults" in stopped.output and "history is on main" in stopped.output
    assert "memd sync --branch main" in stopped.output
    assert git(remote, "for-each-ref") == before
    a("sync", "--branch", "main")
    add(a, "more of a's words")
    a("sync")  # follows main from now on
    assert sync_facts(a)["remote"] == "origin/main"
    clone = Memd(Vault(Path(json_of(init_from(tmp_path, remote, "c", "--branch", "main", "--json").output)["vault"])))
    assert sorted(live(clone.vault).values()) == ["a's words", "more of a's words"]
    verify_ok(clone)


def test_sync_onto_a_remote_holding_only_another_vault_says_how_to_clone_it(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    vault_pushed_as(tmp_path, remote, "theirs", "main")
    mine = Memd(init_vault(tmp_path / "mine").vault)
    git(mine.vault.root, "branch", "-m", "master")
    git(mine.vault.root, "commit", "-q", "--amend", "-m", "init: memd vault on mine")
    git(mine.vault.root, "remote", "add", "origin", str(remote))

    stopped = mine("sync", ok=False)

    assert stopped.exit_code == 1 and "another memd vault" in stopped.output
    assert f"memd init PATH --from {remote} --branch main" in stopped.output
    assert remote_branches(remote) == ["main"]


def test_a_clone_follows_the_remotes_head_branch_among_branches_of_one_vault(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    a = vault_pushed_as(tmp_path, remote, "a", "main")
    add(a, "kept on both branches")
    a("sync", "--branch", "main")
    git(a.vault.root, "push", "-q", "origin", "HEAD:backup")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    assert "branch main" in init_from(tmp_path, remote, "b").output
    git(remote, "symbolic-ref", "HEAD", "refs/heads/elsewhere")
    stopped = init_from(tmp_path, remote, "c", ok=False)
    assert stopped.exit_code == 1 and "on several branches (backup, main)" in stopped.output


def test_a_vault_shared_beside_a_hosting_services_readme_branch_is_the_one_cloned(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    readme = tmp_path / "readme"
    readme.mkdir()
    git(readme, "init", "-q", "-b", "main")
    (readme / "README.md").write_text("# memory\n", encoding="utf-8")
    git(readme, "add", "README.md")
    git(readme, "commit", "-qm", "Initial commit")
    git(readme, "push", "-q", str(remote), "main")
    laptop = Memd(init_vault(tmp_path / "laptop").vault)
    git(laptop.vault.root, "branch", "-m", "master")
    git(laptop.vault.root, "remote", "add", "origin", str(remote))
    add(laptop, "the laptop's words")
    laptop("sync")  # main holds no vault: the vault goes on a branch of its own, as before

    assert remote_branches(remote) == ["main", "master"]
    assert "cloned the vault on branch master" in init_from(tmp_path, remote, "desktop").output
    assert list(live(Vault((tmp_path / "desktop").resolve())).values()) == ["the laptop's words"]


def _branch(name: str, vault: bool, *roots: str) -> Branch:
    return Branch(name, "0" * 40, vault, frozenset(roots))


def test_choose_reads_the_branches_as_documented() -> None:
    one, other = _branch("main", True, "r1"), _branch("master", True, "r2")
    notes = _branch("notes", False, "r3")
    assert choose([one, notes], "notes", None, "u").name == "main"  # HEAD holds no vault: the only vault
    assert choose([one, _branch("old", True, "r1")], "old", None, "u").name == "old"  # HEAD among one vault's
    assert choose([one, other], None, "master", "u").name == "master"
    for branches, wanted in (([one, other], None), ([notes], None), ([one, notes], "notes")):
        try:
            choose(branches, "main", wanted, "u")
        except BranchChoice:
            continue
        raise AssertionError(f"{[b.name for b in branches]} with {wanted} was guessed at")


def test_status_says_when_no_branch_is_tracked_yet(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    a = vault_pushed_as(tmp_path, remote, "a", "master")
    facts = sync_facts(a)
    assert facts["remote"] == "origin/master" and facts["tracked"] is False
    assert "not tracked yet" in a("status").output
    a("sync")
    assert sync_facts(a)["tracked"] is True
    out = subprocess.run(["git", "-C", str(a.vault.root), "status", "-sb"], capture_output=True, text=True).stdout
    assert "origin/master" in out
    assert json.loads(a("sync", "--json").output)["branch"] == "master"
