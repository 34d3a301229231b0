"""The ``memd`` command: a thin click layer over the library.

``memd`` runs ``launch.main``: a plain ``memd add`` (what hooks and scripts
run once per message) is read there without click; every other command goes
to the click group in root.py, whose subcommands live in sibling modules and
are imported only when invoked, so ``memd --help`` starts fast too. This
package's own names (``main``, the group, and the helpers the subcommands
share) are root.py's, imported from it when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.cli.root import (
        emit_json,
        get_memory,
        get_vault,
        json_option,
        main,
        named_vault,
        on_terminal,
        progress_bar,
        vault_root,
    )

__all__ = [
    "emit_json",
    "get_memory",
    "get_vault",
    "json_option",
    "main",
    "named_vault",
    "on_terminal",
    "progress_bar",
    "vault_root",
]


def __getattr__(name: str) -> Any:
    # Lazy, so `memd add` (launch.py) does not import click.
    if name not in __all__:
        raise AttributeError(name)
    from memd.cli import root

    return getattr(root, name)
