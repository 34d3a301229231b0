"""Forgetting on purpose (``memd forget``): entries and whole imports leave the
current files, and with ``purge`` every commit of the history too, after which
the search index is built anew from the files."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.consolidation.forget import Forgotten
    from memd.vault.vault import Vault


class Forgetting:
    """``Memory``'s verbs that take memories back."""

    vault: Vault
    _warn: Callable[[str], None]

    if TYPE_CHECKING:

        def recover(self, *, reading: bool = False) -> str | None: ...
        def may_commit(self) -> None: ...
        def reindex(self) -> Any: ...

    def forget(self, seqs: str, *, purge: bool = False) -> Forgotten:
        """Remove the entries holding ``seqs`` (e.g. ``12`` or ``12+41-43``) on purpose;
        with ``purge``, from every commit of the history too (seqs forgotten
        before are purged all the same)."""
        from memd.consolidation.forget import Forgotten, forget
        from memd.core.errors import NotFound
        from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet

        self.recover()
        self.may_commit()
        wanted = SeqSet.parse(seqs, MAX_SEQS_PER_ENTRY)
        try:
            result = forget(self.vault, wanted)
        except NotFound:
            if not purge:
                raise
            result = Forgotten(str(wanted), (), None)
        return self._purged(result, frozenset(wanted)) if purge else result

    def forget_source(self, path: str, *, purge: bool = False) -> Forgotten:
        """Take back a whole import: its source copy (``path`` under ``sources/``, or
        the imported file) and every entry taken from it; it can be imported again.
        With ``purge``, the copy and the entries leave every commit too."""
        from memd.consolidation.forget import forget_source, source_copy
        from memd.core.signature import SeqSet

        self.recover()
        self.may_commit()
        rel = source_copy(self.vault, path)
        result = forget_source(self.vault, path)
        seqs = frozenset(SeqSet.parse(result.seqs)) if result.seqs else frozenset()
        return self._purged(result, seqs, rel) if purge else result

    def _purged(self, result: Forgotten, seqs: frozenset[int], copy: str | None = None) -> Forgotten:
        from dataclasses import replace

        from memd.consolidation.purge import purge

        texts = [text for _, _, text in result.entries]
        done = replace(result, purged=purge(self.vault, seqs, texts, paths=(copy,) if copy else ()))
        self._reindex_after_purge()
        return done

    def _reindex_after_purge(self) -> None:
        """The search index built from the files as they were may still hold purged words
        (a deleted record stays in its segment until a merge): built anew from them now."""
        from memd.core.errors import MemdError

        try:
            self.reindex()
        except MemdError as err:
            self._warn(f"the search index may still hold the words until `memd reindex` runs: {err}")
