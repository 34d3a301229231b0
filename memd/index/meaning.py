"""Entry texts as sentence vectors, for the offline engine's judgement of what
entries are about; each text is run through the model once, for consolidation
and search together.

The vault's embedding model (``index.embedding``, MiniLM by default) reads
meaning where the lexical statistics of ``text.py`` only see shared words:
"signed up for a pottery class" and "my clay bowls came out of the kiln"
share none. Vectors are kept by the hash of the text (the same key search
uses, ``memd.index.vectors.text_key``) in ``.memd/index/meaning.npz``, so a
text is embedded once for all consolidations; a text search has embedded
already (its ``vectors.npz``) is taken from there, and search's own index
takes what consolidation embedded instead of embedding it a second time. The
file is derived state: a damaged or foreign one is ignored and rebuilt.
Without the model (``index.embedding = none``, weights not installed) the
engine judges by words alone, as before.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.atomic import atomic_write, own_folder
from memd.core.errors import WriteError

if TYPE_CHECKING:
    from memd.index.embedding import Embedder

FILE_NAME = "meaning.npz"
KEEP = 60_000  # vectors kept (90 MB at most); the oldest go first
# English notes, short and informal, have at least two thirds of their words in
# MiniLM's vocabulary; French, Spanish, German and Japanese ones half or less.
READ_SHARE = 0.6
_WORDS = re.compile(r"[^\W\d_]+")
TEXT_CHARS = 1500  # as much of a text as search's vectors read (memd.index.vectors.TEXT_CHARS)


class Meaning:
    """Sentence vectors of texts, cached by text; ``available`` is False without a model."""

    def __init__(self, model: str, folder: Path | None) -> None:
        self.model = model
        self.path = folder / FILE_NAME if folder is not None else None
        self._embedder: Embedder | None = None
        self._checked = False
        self._store: dict[bytes, Any] | None = None
        self._search: dict[bytes, tuple[Any, int]] | None = None
        self._dirty = False

    @property
    def available(self) -> bool:
        if not self._checked:
            self._checked = True
            try:
                from memd.index.embedding import load_embedder
                from memd.index.model_files import ModelUnavailable
            except ImportError:  # numpy missing: words only
                return False
            try:
                self._embedder = load_embedder(self.model)
            except ModelUnavailable:
                self._embedder = None
        return self._embedder is not None

    def reads(self, text: str) -> bool:
        """Whether the model reads ``text``: more than READ_SHARE of its words are
        whole words of its vocabulary. MiniLM reads English; a note in Japanese or
        German comes out near every other text it cannot read (cosine 0.25-0.4
        between unrelated ones, 0.07 between "Trinkt Kaffee mit Hafermilch" and
        "Takes coffee with oat milk"), so its meaning says nothing."""
        words = _WORDS.findall(text.lower())
        if not words or not self.available or self._embedder is None:
            return False
        return sum(self._embedder.knows(word) for word in words) > READ_SHARE * len(words)

    def vectors(self, texts: Sequence[str]) -> Any:
        """Unit float32 vectors, one row per text (texts seen before are not embedded again)."""
        import numpy as np

        from memd.index.embedding import PARALLEL_TEXTS, embed_many, one_blas_thread
        from memd.index.vectors import text_key

        assert self.available and self._embedder is not None
        store = self._load()
        keys = [text_key(text[:TEXT_CHARS]) for text in texts]
        missing = list(dict.fromkeys(key for key in keys if key not in store))
        if missing:  # search may have embedded them already (the daemon keeps its index fresh)
            indexed = self._indexed()
            for key in missing:
                if key in indexed:
                    source, row = indexed[key]
                    store[key] = np.array(source[row], dtype=np.float32)
            missing = [key for key in missing if key not in store]
        if missing:
            wanted = {key: text[:TEXT_CHARS] for key, text in zip(keys, texts, strict=True)}
            if len(missing) < PARALLEL_TEXTS:  # a few texts: one thread, no BLAS threads spinning idle
                with one_blas_thread():
                    fresh = self._embedder.embed([wanted[key] for key in missing])
            else:
                fresh = embed_many(self._embedder, [wanted[key] for key in missing])
            for key, row in zip(missing, fresh, strict=True):
                store[key] = np.asarray(row, dtype=np.float32)
            self._dirty = True
        out = np.zeros((len(texts), self._embedder.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = store[key]
        return out

    def reuse(self, texts: Sequence[str], embed: Any) -> Any:
        """Vectors of ``texts`` (as search reads them) for search's own index:
        those kept here are taken, ``embed`` makes the rest."""
        import numpy as np

        from memd.index.vectors import text_key

        if not texts or not self.available:
            return embed(texts)
        store = self._load()
        keys = [text_key(text) for text in texts]
        rest = [i for i, key in enumerate(keys) if key not in store]
        out = np.zeros((len(texts), self._dim()), dtype=np.float32)
        if rest:
            out[rest] = embed([texts[i] for i in rest])
        for i, key in enumerate(keys):
            if key in store:
                out[i] = store[key]
        return out

    def _indexed(self) -> dict[bytes, tuple[Any, int]]:
        """Search's stored vectors (``vectors.npz`` and its segments) by text key, when they are of this model."""
        if self._search is not None:
            return self._search
        self._search = {}
        if self.path is None or self._embedder is None:
            return self._search
        from memd.index.vectors import VectorIndex

        index = VectorIndex.load(self.path.parent, self._embedder.name, self._embedder.dim)
        if not index.damaged:
            self._search.update(index.stored())
        return self._search

    def save(self) -> None:
        """Write the cache if it gained vectors (atomically; the newest ``KEEP``)."""
        if not self._dirty or self.path is None or self._store is None:
            return
        import numpy as np

        kept = list(self._store.items())[-KEEP:]
        buffer = io.BytesIO()
        np.savez(
            buffer,
            meta=np.array(json.dumps({"model": self.model, "dim": self._dim()})),
            keys=np.array([key for key, _ in kept], dtype="S20"),
            vectors=np.stack([v for _, v in kept]) if kept else np.zeros((0, self._dim()), np.float32),
        )
        try:
            # Never through a link standing in for .memd/index: it would carry the cache out of the vault.
            own_folder(self.path.parent).mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, buffer.getvalue())
        except (OSError, WriteError):
            return  # derived state: the next run embeds again
        self._dirty = False

    def _dim(self) -> int:
        return self._embedder.dim if self._embedder is not None else 0

    def _load(self) -> dict[bytes, Any]:
        if self._store is not None:
            return self._store
        self._store = {}
        if self.path is None or not self.path.is_file():
            return self._store
        import numpy as np

        try:
            with np.load(self.path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"][()]))
                keys, vectors = data["keys"], np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, ValueError, KeyError, json.JSONDecodeError):
            return self._store  # damaged: rebuilt as texts are embedded again
        if meta.get("model") != self.model or vectors.ndim != 2 or vectors.shape[0] != len(keys):
            return self._store
        if vectors.shape[1] != self._dim():
            return self._store
        self._store = {bytes(key): vectors[i] for i, key in enumerate(keys)}
        return self._store
