"""The embedding-model seam: a name in the vault config -> a sentence encoder.

``MODELS`` maps each model name memd knows to a factory; ``load_embedder``
builds one or raises ``ModelUnavailable`` (weights not installed), in which
case retrieval is lexical only and ``memd status`` says why. Weights always
come from an installed package, never from the network.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from memd.index.cores import embedding_threads
from memd.index.model_files import ModelUnavailable, minilm_folder

NO_MODEL = "none"
DEFAULT_MODEL = "minilm-l6"
PARALLEL_TEXTS = 256  # below this, threads cost more than they save
QUERY_VECTORS = 512  # query vectors remembered per process (1.5 KB each)


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any:
        """Unit-length float32 vectors, one row per text (a numpy array)."""

    def knows(self, word: str) -> bool:
        """Whether ``word`` (lower case) is a whole word of the model's vocabulary."""

    def __hash__(self) -> int:
        """By identity: query vectors are remembered per model object."""


def _minilm() -> Embedder:
    from memd.index.minilm import MiniLM, note_path

    folder = minilm_folder()
    return MiniLM(folder, checked=note_path(_cache_dir(), folder / "model.safetensors"))


def _cache_dir() -> Path:
    """Where memd notes what it need not redo per process (the user's cache folder)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memd"


MODELS: dict[str, Callable[[], Embedder]] = {DEFAULT_MODEL: _minilm}
# Cheap checks that a model could load (no weights read), for `memd status`.
LOCATORS: dict[str, Callable[[], object]] = {DEFAULT_MODEL: minilm_folder}


def unavailable(name: str) -> str | None:
    """Why the model ``name`` cannot be used here, or None when it can (reads no weights)."""
    if name == NO_MODEL:
        return "semantic retrieval is turned off (index.embedding = none)"
    if name not in MODELS:
        return f"unknown embedding model {name!r} (known: {', '.join([*MODELS, NO_MODEL])})"
    for module in ("numpy", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            return f"semantic retrieval needs {module} (pip install {module})"
    try:
        LOCATORS[name]()
    except ModelUnavailable as err:
        return str(err)
    return None


def load_embedder(name: str) -> Embedder:
    """The model called ``name`` (loaded once per process and weights folder)."""
    return _load(name, os.environ.get("MEMD_MINILM_DIR"))


@lru_cache(maxsize=4)
def _load(name: str, _folder: str | None) -> Embedder:
    reason = unavailable(name)
    if reason:
        raise ModelUnavailable(reason)
    return MODELS[name]()


def embed_many(embedder: Embedder, texts: Sequence[str], workers: int | None = None) -> Any:
    """``embedder.embed`` over many texts, spread over the machine's cores.

    numpy releases the GIL in its matrix products and element-wise steps, so
    threads run in parallel; BLAS is held to one thread each, since two
    layers of threads on two cores only contend."""
    import numpy as np

    workers = workers or embedding_threads()
    if workers < 2 or len(texts) < PARALLEL_TEXTS:
        return embedder.embed(texts)
    # Imported here: concurrent.futures brings logging and traceback, which a search never needs.
    from concurrent.futures import ThreadPoolExecutor

    # Interleaved shares keep the mix of short and long texts alike in each.
    shares = [list(range(i, len(texts), workers)) for i in range(workers)]
    with one_blas_thread(), ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda rows: embedder.embed([texts[i] for i in rows]), shares))
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for rows, part in zip(shares, parts, strict=True):
        out[rows] = part
    return out


def one_blas_thread() -> Any:
    """A context in which numpy's BLAS runs on one thread.

    For one short query a second BLAS thread only adds waiting (and on a busy
    machine, much of it); for many texts ``embed_many`` runs threads of its own."""
    controller = _controller()
    if controller is None:
        from contextlib import nullcontext

        return nullcontext()
    return controller.limit(limits=1, user_api="blas")


def one_blas_thread_from_now() -> None:
    """Run numpy's BLAS on one thread for the rest of the process (memd's only
    numpy work is its index). A second BLAS thread gains nothing on a query's
    small products, and after each product it spins idle for a while: on two
    busy cores that spinning took CPU from the query itself (measured with
    bench/bench_vectors.py: the words-only part of a query cost about twice
    its CPU time). ``embed_many`` runs threads of its own."""
    controller = _controller()
    if controller is not None:
        controller.limit(limits=1, user_api="blas")


@lru_cache(maxsize=1)
def _controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    # A controller knows only the BLAS libraries loaded when it is made (and is made
    # once): numpy's must be among them, or limiting its threads silently does nothing.
    import numpy  # noqa: F401

    return ThreadpoolController()


def embed_query(embedder: Embedder, text: str) -> Any:
    """The unit vector of one query, remembered: an agent or a person asking again
    (``memd search`` then ``memd ask``, a retry, paging) pays the model once.
    The vector is read-only, since every caller with that text shares it."""
    return _query_vector(embedder, text)


@lru_cache(maxsize=QUERY_VECTORS)
def _query_vector(embedder: Embedder, text: str) -> Any:
    with one_blas_thread():
        vector = embedder.embed([text])[0]
    vector.flags.writeable = False
    return vector


def describe_retrieval(name: str) -> dict[str, object]:
    """Which retrieval a vault with embedding model ``name`` gets (for ``memd status``)."""
    reason = unavailable(name)
    if reason is None:
        return {"mode": "hybrid", "model": name, "summary": f"hybrid: words (BM25) + meaning ({name})"}
    return {"mode": "lexical", "model": None, "summary": f"lexical: words only ({reason})"}
