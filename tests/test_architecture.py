"""Architecture boundaries, checked by reading the source with ``ast``.

memd is layered: front doors (CLI, MCP server, daemon) -> the application
layer (memd.app.Memory) -> the library (vault core, consolidation, index,
ingest, engines). These tests keep the layers honest as the code grows.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memd"
FRONT_DOORS = ("memd.cli", "memd.mcp_server", "memd.daemon")
# What a front door must reach only through memd.app.
INTERNALS = (
    "memd.vault.buffer",
    "memd.ask.tools",
    "memd.ask.offline",
    "memd.ask.agent",
    "memd.vault.state",
    "memd.consolidation",
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
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
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


@pytest.mark.parametrize("door", FRONT_DOORS)
def test_front_doors_reach_the_library_only_through_the_application_layer(door: str) -> None:
    edges = graph()
    offenders = {
        f"{module} imports {target}"
        for module, targets in edges.items()
        if module == door or module.startswith(door + ".")
        for target in targets
        if any(target == internal or target.startswith(internal + ".") for internal in INTERNALS)
    }
    assert not offenders, sorted(offenders)


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
