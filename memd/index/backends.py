"""Search backends behind one seam (see base.py), chosen by name from ``BACKENDS``.

``[index] backend`` in ``.memd/config.toml`` (or ``MEMD_INDEX_BACKEND``) names
one; each keeps its own folder under ``.memd/index/`` and the manifest records
which one built the index, so switching backends rebuilds it from the files.
The default, ``auto``, is tantivy (a dependency: its queries stay within
tens of milliseconds at 100k records) and Whoosh where tantivy is not
installed (an older environment, a platform without its wheel), so a search
never fails for want of it. A vault configured for tantivy by name without
the package gets one ``ConfigError`` naming the fix rather than a silent
fall-back to a different engine (whose first build on a large vault could
take minutes).

Importing this module imports no search engine: ``memd status`` reads the
manifest only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from memd.core.errors import ConfigError
from memd.index.base import Backend

# A vault past this many records is better served by tantivy (bench/bench_index.py:
# Whoosh's query time grows with the vault, tantivy's barely does).
SUGGEST_TANTIVY_RECORDS = 20_000


def _whoosh(folder: Path, create: bool) -> Backend:
    from memd.index.whoosh_backend import WhooshBackend

    return WhooshBackend(folder, create=create)


def _tantivy(folder: Path, create: bool) -> Backend:
    require("tantivy")
    from memd.index.tantivy_backend import TantivyBackend

    return TantivyBackend(folder, create=create)


BACKENDS: dict[str, Callable[[Path, bool], Backend]] = {"whoosh": _whoosh, "tantivy": _tantivy}
# The package each backend needs beyond memd's own dependencies.
EXTRAS: dict[str, str] = {"tantivy": "tantivy"}


AUTO = "auto"


def resolve(name: str) -> str:
    """The backend a configured name means here: ``auto`` picks tantivy when installed."""
    if name == AUTO:
        return "tantivy" if _installed("tantivy") else "whoosh"
    return name


def missing_package(name: str) -> str | None:
    """The one-line reason backend ``name`` cannot run here, or None."""
    package = EXTRAS.get(name)
    if package is None or _installed(package):
        return None
    return (
        f"index backend {name!r} needs the {package} package: pip install 'memd[{name}]' "
        f'(or set [index] backend = "whoosh" in .memd/config.toml)'
    )


def _installed(package: str) -> bool:
    try:
        return find_spec(package) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules (None) has no spec
        return False


def require(name: str) -> None:
    """Raise ``ConfigError`` when backend ``name`` is unknown or its package is missing."""
    if name not in BACKENDS:
        raise ConfigError(f"unknown index backend {name!r}; backends: {', '.join(BACKENDS)}")
    reason = missing_package(name)
    if reason is not None:
        raise ConfigError(reason)


def open_backend(name: str, folder: Path, create: bool = False) -> Backend:
    """Backend ``name`` over ``folder`` (created empty when ``create``)."""
    require(name)
    return BACKENDS[name](folder, create)


def describe_index(index_dir: Path, name: str, vectors: bool = False) -> dict[str, Any]:
    """What ``memd status`` says of the index, from the manifest alone (no engine imported);
    with ``vectors`` (meaning is on), how far the stored vectors cover the indexed files."""
    name = resolve(name)
    records: int | None = None
    built_by: str | None = None
    digests: dict[str, str] = {}
    try:
        manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
        if isinstance(manifest, dict) and isinstance(manifest.get("records"), int):
            records, built_by = manifest["records"], manifest.get("engine")
            files = manifest.get("files")
            if isinstance(files, dict):
                digests = {str(rel): str(entry[2]) for rel, entry in files.items() if isinstance(entry, list)}
    except (OSError, ValueError, IndexError):
        pass
    problem = missing_package(name)
    summary = f"{name}, " + (f"{records:,} records" if records is not None else "not built yet")
    if built_by is not None and built_by != name:
        summary += f" (built by {built_by}: rebuilt on the next search)"
    elif vectors and records is not None:
        from memd.index.coverage import describe_vectors

        summary += "; " + describe_vectors(index_dir, digests)
    suggestion = None
    if name == "whoosh" and records is not None and records > SUGGEST_TANTIVY_RECORDS:
        # Judged by size alone: no query times are recorded, and Whoosh's grow with the records.
        suggestion = (
            f"{records:,} records: the tantivy backend searches a vault this size several times faster "
            f"(pip install 'memd[tantivy]', then memd config set index.backend tantivy)"
        )
    return {"backend": name, "records": records, "summary": summary, "problem": problem, "suggestion": suggestion}
