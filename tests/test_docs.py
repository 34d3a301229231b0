"""The documentation: the README stays a short guide, the docs site builds, and
the generated references (the CLI's, the MCP tools') have text for everything
they list."""

from __future__ import annotations

import copy
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

from memd.cli.root import main

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memd_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the CLI reference: every command and option has the text mkdocs-click renders


def undocumented(group: click.Command, prog: str = "memd") -> list[str]:
    """Every command without a help text and every visible option without one, as `memd x --opt`."""
    problems: list[str] = []

    def walk(command: click.Command, path: str, parent: click.Context | None) -> None:
        ctx = click.Context(command, info_name=path.split()[-1], parent=parent)
        if not (command.help or "").strip():
            problems.append(f"{path}: command has no help")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip():
                problems.append(f"{path} {param.opts[-1]}: option has no help")
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}", ctx)

    walk(group, prog, None)
    return problems


def test_every_command_and_option_has_help_text() -> None:
    assert undocumented(main) == []


@click.command()
@click.option("--quiet", is_flag=True)
@click.option("--loud", is_flag=True, help="Say it all.")
def _planted() -> None:
    pass


def test_the_help_check_names_an_undocumented_command_and_option() -> None:
    class Planted(type(main)):  # type: ignore[misc]
        def list_commands(self, ctx: click.Context) -> list[str]:
            return [*super().list_commands(ctx), "planted"]

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return _planted if name == "planted" else super().get_command(ctx, name)

    planted = copy.copy(main)
    planted.__class__ = Planted
    assert undocumented(planted) == ["memd planted: command has no help", "memd planted --quiet: option has no help"]
    assert undocumented(main) == []  # the copy changed nothing of the real group


def test_the_cli_reference_renders_every_command() -> None:
    from mkdocs_click._docs import make_command_docs

    text = "\n".join(make_command_docs(prog_name="memd", command=main, depth=1, style="plain", list_subcommands=True))
    ctx = click.Context(main, info_name="memd")
    for name in main.list_commands(ctx):
        assert f"memd {name} [OPTIONS]" in text, name
    assert "::: mkdocs-click" in (DOCS / "cli.md").read_text(encoding="utf-8")


def test_click_example_lines_are_shown_as_code() -> None:
    html = '<p>Examples:\n    memd add "x"\n    echo y \\\n        | memd add</p>\n<p>Plain text.</p>'
    assert hooks().examples_as_code(html) == (
        '<p>Examples:</p>\n<pre><code class="language-sh">memd add "x"\necho y \\\n    | memd add\n</code></pre>'
        "\n<p>Plain text.</p>"
    )


# -- the MCP reference: made from the server's own tool list


def test_the_mcp_page_is_current() -> None:
    assert (DOCS / "mcp.md").read_text(encoding="utf-8") == hooks().mcp_page(), "run `python docs/hooks.py`"


def test_the_mcp_page_describes_every_tool_and_argument() -> None:
    import asyncio

    from memd.mcp.server import TOOLS, build_server

    page = (DOCS / "mcp.md").read_text(encoding="utf-8")
    tools = asyncio.run(build_server(object()).list_tools())  # type: ignore[arg-type]
    assert sorted(tool.name for tool in tools) == sorted(TOOLS)
    for tool in tools:
        assert f"### {tool.name}\n" in page and (tool.title or "") in page
        assert (tool.description or "").strip(), f"{tool.name} has no description"
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description", "").strip(), f"{tool.name}({name}) has no description"
            assert f"| `{name}` |" in page


def test_the_architecture_page_is_architecture_md() -> None:
    assert hooks().architecture_page() == (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")


# -- the README: a short guide whose links lead somewhere


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_short_guide_with_two_set_up_commands() -> None:
    text = readme()
    assert len(text.splitlines()) <= 400
    set_up = text.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", set_up, re.S)
    assert commands == [
        'pip install -e . && memd --vault vault status && memd --vault vault ask "when is the Atlas cut-over?"',
        "pip install -e '.[test]' && pytest",
    ]
    assert "bench/" not in text  # measurements live in docs/benchmarks.md


def links(text: str) -> list[str]:
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in target]


def test_every_link_of_the_readme_leads_to_a_file_and_heading() -> None:
    for target in links(readme()):
        path, _, anchor = target.partition("#")
        if not path:
            headings = re.findall(r"^#+ (.+)$", readme(), re.M)
            assert anchor in {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            continue
        if path.startswith("../") or "sources/" in path:
            continue  # the examples of a link inside a vault
        assert (REPO / path).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (REPO / path).read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
            assert anchor in slugs, target


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_module_a_docs_page_names_exists(page: str) -> None:
    text = (DOCS / page).read_text(encoding="utf-8")
    missing = sorted({path for path in re.findall(r"(?<![.\w])memd/[\w/]+\.py", text) if not (REPO / path).is_file()})
    assert not missing, f"docs/{page} names modules that do not exist: {missing}"


def test_the_changelog_starts_with_unreleased() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, re.M)[0] == "Unreleased"


# -- the site


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    for page in ("cli", "mcp", "architecture", "benchmarks", "search"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page
    assert "memory_forget" in (tmp_path / "site" / "mcp" / "index.html").read_text(encoding="utf-8")
