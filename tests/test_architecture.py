"""Architecture boundaries, checked by reading the source with ``ast``.

memd's folders are its layers (ARCHITECTURE.md, "Layers"): a package may
import packages of its own layer or below, never above, and no two folders
import each other. These tests keep the layers honest as the code grows.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memd"
REPOSITORY = PACKAGE.parent
# Bottom to top. "memd" is the top-level __init__ (the version, the lazy
# ``memd.Memory``); ``__main__`` is a module of the top.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("git",),
    ("vault",),
    ("index",),
    ("engine",),
    ("ask",),
    ("consolidation",),
    ("review", "ingest"),
    ("sync",),
    ("app",),
    ("daemon", "cli", "mcp", "memd", "__main__"),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path) -> set[str]:
    """Every memd module ``path`` imports, at any depth (lazy imports count), but
    not imports made only for the type checker."""
    return imports_of_source(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


def imports_of_source(source: str, me: str, is_package: bool) -> set[str]:
    """``imports_of`` for the source of module ``me``."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = me if is_package else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("memd"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("memd"):
                continue
            found.add(target)
            for alias in node.names:  # `from . import journal` imports a module
                if (PACKAGE.parent / Path(*f"{target}.{alias.name}".split("."))).with_suffix(".py").exists():
                    found.add(f"{target}.{alias.name}")
    return found - {me}


@functools.cache
def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges[name] = {target for target in imports_of(path) if target in modules}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the list of modules along it, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            # A package's __init__ re-exporting its own modules is not a cycle.
            if node.startswith(target + ".") or target.startswith(node + "."):
                continue
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_memd_has_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def package_of(module: str) -> str:
    """The folder a module lives in (``memd.vault.buffer`` -> ``vault``); the
    modules directly in ``memd/`` are their own (``memd.__main__`` -> ``__main__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def folder_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which folders import which (a folder importing itself left out)."""
    folders: dict[str, set[str]] = {}
    for module, targets in edges.items():
        mine = package_of(module)
        folders.setdefault(mine, set()).update(package_of(t) for t in targets if package_of(t) != mine)
    return folders


def upward_imports(edges: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """Each import of a package from a higher layer, and each package that no
    layer names. Imports made only for the type checker (under
    ``if TYPE_CHECKING:``) are not in ``edges`` (see ``imports_of``): a lower
    layer may name a higher one's type in an annotation, never run its code."""
    level = {package: n for n, layer in enumerate(layers) for package in layer}
    offenders = [f"{package} is in no layer" for package in sorted({package_of(m) for m in edges} - set(level))]

    def upward(module: str, target: str) -> str | None:
        mine, theirs = package_of(module), package_of(target)
        if mine in level and theirs in level and level[theirs] > level[mine]:
            return f"{module} ({mine}) imports {target} ({theirs}), a higher layer"
        return None

    return offenders + offending_edges(edges, upward)


def offending_edges(edges: dict[str, set[str]], judge: Callable[[str, str], str | None]) -> list[str]:
    """What ``judge`` says of each import (module, target) it finds wrong, in order."""
    return [
        why for module, targets in sorted(edges.items()) for target in sorted(targets) if (why := judge(module, target))
    ]


def test_each_package_imports_only_its_own_layer_or_below() -> None:
    offenders = upward_imports(graph())
    assert not offenders, offenders


def test_no_two_folders_import_each_other() -> None:
    cycle = find_cycle(folder_edges(graph()))
    assert cycle is None, "folder import cycle: " + " -> ".join(cycle or [])


def test_the_layering_check_sees_a_lower_package_importing_a_higher_one() -> None:
    edges = graph()
    before = upward_imports(edges)

    def new(changed: dict[str, set[str]]) -> list[str]:
        return [offender for offender in upward_imports(changed) if offender not in before]

    # core reaching up into the application layer, as one new import would.
    broken = {**edges, "memd.core.atomic": {*edges["memd.core.atomic"], "memd.app.memory"}}
    assert new(broken) == ["memd.core.atomic (core) imports memd.app.memory (app), a higher layer"]
    # A new folder must be given a layer.
    assert new({**edges, "memd.newthing.x": set()}) == ["newthing is in no layer"]
    # Two folders of one layer importing each other are a folder cycle.
    tangled = {**edges, "memd.review.diff": {*edges["memd.review.diff"], "memd.ingest.formats"}}
    tangled["memd.ingest.pipeline"] = {*edges["memd.ingest.pipeline"], "memd.review.diff"}
    assert not new(tangled)
    assert find_cycle(folder_edges(tangled)) is not None


def test_imports_for_the_type_checker_only_are_not_edges() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from memd.core.errors import MemdError\n"
        "if TYPE_CHECKING:\n"
        "    from memd.app.memory import Memory\n"
        "def later() -> None:\n"
        "    from memd.vault.vault import Vault\n"
    )
    assert imports_of_source(source, "memd.core.mod", is_package=False) == {"memd.core.errors", "memd.vault.vault"}


# What each front door may import besides itself (ARCHITECTURE.md §5): the
# application layer and what knows no vault; the CLI also starts the other two
# doors. "memd" is the top-level package (``memd.Memory``, the version).
FRONT_DOORS: dict[str, frozenset[str]] = {
    "daemon": frozenset({"app", "core", "memd"}),
    "mcp": frozenset({"app", "core", "memd"}),
    "cli": frozenset({"app", "core", "memd", "daemon", "mcp"}),
}


def front_door_reaches(edges: dict[str, set[str]]) -> list[str]:
    """Each import by a front door of a package below ``memd.app`` (imports
    for the type checker only are not edges: a door may name ``Vault`` in an
    annotation)."""

    def below(module: str, target: str) -> str | None:
        allowed = FRONT_DOORS.get(package_of(module))
        theirs = package_of(target)
        if allowed is not None and theirs != package_of(module) and theirs not in allowed:
            return f"{module} imports {target}: a front door calls memd.Memory (memd.app)"
        return None

    return offending_edges(edges, below)


def test_front_doors_go_through_the_application_layer() -> None:
    offenders = front_door_reaches(graph())
    assert not offenders, offenders


def test_the_front_door_check_sees_a_door_reaching_below_the_app_layer() -> None:
    planted = (
        "from typing import TYPE_CHECKING\n"
        "from memd.app import Memory\n"
        "from memd.core.errors import MemdError\n"
        "from memd.daemon.watch import Debouncer\n"
        "from memd.vault.vault import Vault\n"
        "if TYPE_CHECKING:\n"
        "    from memd.git.log import Commit\n"
    )
    edges = {"memd.daemon.planted": imports_of_source(planted, "memd.daemon.planted", is_package=False)}
    assert front_door_reaches(edges) == [
        "memd.daemon.planted imports memd.vault.vault: a front door calls memd.Memory (memd.app)"
    ]
    # The CLI starts the daemon and the MCP server; the daemon starts neither.
    assert front_door_reaches({"memd.cli.x": {"memd.daemon.runner", "memd.mcp.server"}}) == []
    assert front_door_reaches({"memd.daemon.x": {"memd.cli.root"}}) == [
        "memd.daemon.x imports memd.cli.root: a front door calls memd.Memory (memd.app)"
    ]


def test_no_code_outside_the_engine_package_tests_an_engine_name() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "engine"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "engine.name" in line or '== "llm"' in line or "== 'llm'" in line:
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert not offenders, offenders


GIT_SEAM = PACKAGE / "git" / "command.py"
_SPAWNERS = ("subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn")


def git_spawns(source: str) -> list[int]:
    """Lines that start git themselves: a process-spawning call naming git, or
    a command line built as a list or tuple that begins with "git"."""

    def is_git(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split(" ")[0] == "git"

    tree = ast.parse(source)
    # Names that hold "git" (`GIT = "git"`) name it too.
    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and is_git(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def names_git(node: ast.AST) -> bool:
        return is_git(node) or (isinstance(node, ast.Name) and node.id in aliases)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).startswith(_SPAWNERS):
            if any(names_git(inner) for arg in [*node.args, *node.keywords] for inner in ast.walk(arg)):
                found.append(node.lineno)
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts and names_git(node.elts[0]):
            found.append(node.lineno)
    return sorted(set(found))


def test_only_the_git_seam_starts_git() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != GIT_SEAM
        for line in git_spawns(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"start git through memd.git.command: {offenders}"


def test_the_git_spawn_finder_sees_each_way_of_starting_git() -> None:
    assert git_spawns('subprocess.run(["git", "-C", root, "status"])') == [1]
    assert git_spawns("import os\nos.system('git status')") == [2]
    assert git_spawns('argv = ("git", "log")\nsubprocess.Popen(argv)') == [1]
    assert git_spawns('GIT = "git"\nsubprocess.run([GIT, "init"])') == [2]
    assert git_spawns('subprocess.run([sys.executable, "-m", "memd"])\nChoice(["claude", "git"])') == []
    assert git_spawns(GIT_SEAM.read_text(encoding="utf-8")) != []  # the seam itself would be found


def test_only_the_entry_points_sit_directly_in_memd() -> None:
    # Everything else belongs to a folder, which is its layer (the MCP server is memd/mcp/).
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == ["__init__", "__main__"]


def test_architecture_md_names_every_package_and_no_other() -> None:
    text = (REPOSITORY / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`memd/([a-z_]+)/", text))
    existing = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert not named - existing, f"ARCHITECTURE.md names packages that do not exist: {sorted(named - existing)}"
    assert not existing - named, f"ARCHITECTURE.md does not name these packages: {sorted(existing - named)}"


@pytest.mark.parametrize("doc", ["ARCHITECTURE.md", "README.md", "CONTRIBUTING.md"])
def test_every_module_a_document_names_exists(doc: str) -> None:
    text = (REPOSITORY / doc).read_text(encoding="utf-8")
    missing = sorted(
        {path for path in re.findall(r"(?<![.\w])memd/[\w/]+\.py", text) if not (REPOSITORY / path).is_file()}
    )
    assert not missing, f"{doc} names modules that do not exist: {missing}"
