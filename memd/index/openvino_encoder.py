"""MiniLM's forward pass compiled by OpenVINO, for bulk embedding (an index build).

Optional: used only when the ``openvino`` package is installed (``pip install
'memd[fast]'``). The graph is built here from the same weights the numpy
encoder holds, layer for layer (same tanh GELU, same padding mask, same
pooling), so no other model file is read. OpenVINO runs the products in
bfloat16 where the processor has bfloat16 dot products (its default there)
and in float32 elsewhere: on this project's benchmark machine (AVX-512 with
bfloat16) a text costs about half the CPU of numpy's best kernel, and the
vectors stay within 1e-4 cosine of numpy's (``bench/bench_embed.py``).

Queries are still embedded by numpy: one text gains nothing from a compiled
graph, and a query vector then matches the stored ones exactly as before.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

Forward = Callable[[np.ndarray, np.ndarray], np.ndarray]
# MEMD_ENCODER=numpy turns the compiled path off (to compare, or if it misbehaves).
SETTING = "MEMD_ENCODER"


def wanted() -> bool:
    """Whether bulk embedding should go through OpenVINO: installed and not turned off."""
    return os.environ.get(SETTING, "").strip().lower() != "numpy" and importlib.util.find_spec("openvino") is not None


def compile_forward(model: Any, heads: int, eps: float) -> Forward:
    """``model``'s forward pass (a ``MiniLM``: its arrays, ``heads`` attention heads,
    layer norms' ``eps``) as an OpenVINO graph: ``(tokens, mask) -> vectors``.

    Each calling thread gets an inference request of its own, so the threads of
    ``embed_many`` run side by side as they do with numpy."""
    import openvino as ov

    from memd.index.cores import embedding_threads

    core = ov.Core()
    # A stream of one thread for each of embed_many's threads: a stream runs one
    # request at a time, so with fewer streams the threads would take turns.
    streams = embedding_threads()
    settings = {"INFERENCE_NUM_THREADS": streams, "NUM_STREAMS": streams}
    compiled = core.compile_model(_graph(model, heads, eps), "CPU", settings)
    local = threading.local()

    def forward(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        request = getattr(local, "request", None)
        if request is None:
            request = local.request = compiled.create_infer_request()
        result = request.infer({"ids": tokens, "mask": mask})
        return np.array(result[0], dtype=np.float32, copy=True)

    return forward


def _graph(model: Any, heads: int, eps: float) -> Any:
    import openvino as ov
    import openvino.opset13 as op

    def const(value: Any) -> Any:
        # np.ascontiguousarray would make a scalar an array of one: a scalar must stay one.
        array = np.asarray(value)
        return op.constant(array if array.ndim == 0 else np.ascontiguousarray(array))

    def ints(*values: int) -> Any:
        return const(np.array(values, dtype=np.int64))

    last_axis = ints(-1)

    def norm(x: Any, weight_bias: tuple[np.ndarray, np.ndarray]) -> Any:
        weight, bias = weight_bias
        normed = op.mvn(x, last_axis, True, eps, "inside_sqrt")
        return op.add(op.multiply(normed, const(weight)), const(bias))

    def dense(x: Any, weight: np.ndarray, bias: np.ndarray) -> Any:
        return op.add(op.matmul(x, const(weight), False, False), const(bias))

    hidden_size = int(model.dim)
    width = hidden_size // heads
    ids = op.parameter([-1, -1], np.int64, name="ids")
    mask = op.parameter([-1, -1], np.float32, name="mask")
    axis0, axis1 = const(np.int64(0)), const(np.int64(1))
    length = op.unsqueeze(op.gather(op.shape_of(ids), axis1, axis0), axis0)
    positions = op.slice(const(model.position), ints(0), length, ints(1))
    x = op.add(op.add(op.gather(const(model.word), ids, axis0), positions), const(model.token_type))
    x = norm(x, model.norm0)
    # Padding takes no attention: -1e9 added to its scores, as in the numpy encoder.
    blocked = op.multiply(op.subtract(const(np.float32(1.0)), mask), const(np.float32(-1e9)))
    padding = op.unsqueeze(blocked, ints(1, 2))
    split_heads = ints(0, 0, heads, width)
    join_heads = ints(0, 0, hidden_size)
    swap = ints(0, 2, 1, 3)  # (texts, tokens, heads, width) <-> (texts, heads, tokens, width)
    scale = const(np.float32(1.0 / np.sqrt(width)))
    for layer in model.layers:
        qkv = op.split(dense(x, layer.qkv, layer.qkv_bias), const(np.int64(-1)), 3)
        query, key, value = (op.transpose(op.reshape(qkv.output(i), split_heads, True), swap) for i in range(3))
        scores = op.add(op.multiply(op.matmul(query, key, False, True), scale), padding)
        context = op.matmul(op.softmax(scores, -1), value, False, False)
        context = op.reshape(op.transpose(context, swap), join_heads, True)
        x = norm(op.add(x, dense(context, layer.out, layer.out_bias)), layer.norm1)
        hidden = op.gelu(dense(x, layer.up, layer.up_bias), "tanh")
        x = norm(op.add(x, dense(hidden, layer.down, layer.down_bias)), layer.norm2)
    # Mean over the tokens, then unit length.
    weights = op.unsqueeze(mask, ints(2))
    summed = op.reduce_sum(op.multiply(x, weights), axis1, False)
    counts = op.maximum(op.reduce_sum(mask, axis1, True), const(np.float32(1.0)))
    pooled = op.divide(summed, counts)
    size = op.sqrt(op.reduce_sum(op.multiply(pooled, pooled), axis1, True))
    vectors = op.divide(pooled, op.maximum(size, const(np.float32(1e-12))))
    return ov.Model([vectors], [ids, mask], "all-MiniLM-L6-v2")
