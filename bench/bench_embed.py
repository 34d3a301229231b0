"""Embedding throughput: texts a second of CPU, for memd's numpy MiniLM and for the
same model in ONNX Runtime (float32, and int8 weights), measured side by side.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_embed.py                 # 2,000 chat-like texts, 5 rounds
    python bench/bench_embed.py --texts 4000 --rounds 7
    pip install -e '.[fast]' && python bench/bench_embed.py   # adds the OpenVINO row (memd's bulk path)
    pip install onnx onnxruntime && python bench/bench_embed.py   # adds the ONNX Runtime rows

The texts are drawn like bench/bench_vectors.py's entries (one to three
sentences of 3 to 12 words from the hand-written chats in bench/data), and
are embedded as an index build embeds them: ``embed_many`` (two threads, one
BLAS thread each) for numpy, at several padded-token budgets per forward
pass (``memd.index.minilm.BATCH_TOKENS``), through OpenVINO as memd's bulk
path does when ``memd[fast]`` is installed, and one ONNX Runtime session per
thread count for the graph built below from the same weights (same layers,
same tanh GELU). Rounds alternate the ways, so all see the same load; each
row gives the median CPU milliseconds per text, texts per CPU second, the
median wall seconds, and the smallest cosine to numpy's vectors.

The products run on the kernel OpenBLAS picks for the processor (printed
first); an ``OPENBLAS_CORETYPE`` in the environment overrides it. Compare the
kernels in one session, alternating (``env -u OPENBLAS_CORETYPE ...`` and
``OPENBLAS_CORETYPE=Haswell ...``), as the README does.

memd does not use ONNX Runtime: float32 was 1.3 times cheaper than numpy
here and costs 0.6 s of CPU to set up (two native packages besides); int8 was
about 2 times cheaper but lowered LoCoMo recall by 0.005 to 0.011. OpenVINO
(bfloat16 products on a processor that has them) was about 2 times cheaper
with the same LoCoMo figures, and needs one package: memd uses it for bulk
embedding when installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vectors import chat_texts

from memd.index import minilm, openvino_encoder
from memd.index.embedding import embed_many, load_embedder, one_blas_thread
from memd.index.model_files import minilm_folder

HEADS = 12
HIDDEN = 384
LAYERS = 6
LAYER_NORM_EPS = 1e-12
OPSET = 20  # Gelu with approximate="tanh"


def model_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    """The serialised ONNX model of all-MiniLM-L6-v2 from its safetensors tensors.

    Inputs ``ids`` (int64, texts x tokens) and ``mask`` (float32, 1 for a
    token, 0 for padding); output ``vectors`` (float32, texts x 384)."""
    from onnx import TensorProto, helper, numpy_helper

    initializers: list[Any] = []
    nodes: list[Any] = []

    def constant(name: str, value: Any) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], **attributes: Any) -> str:
        output = f"{kind.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [output], name=output, **attributes))
        return output

    def norm(x: str, prefix: str) -> str:
        weight = constant(prefix + "weight", tensors[prefix + "weight"])
        bias = constant(prefix + "bias", tensors[prefix + "bias"])
        return op("LayerNormalization", [x, weight, bias], axis=-1, epsilon=LAYER_NORM_EPS)

    def dense(x: str, prefix: str) -> str:
        weight = constant(prefix + "weight", tensors[prefix + "weight"].T)
        bias = constant(prefix + "bias", tensors[prefix + "bias"])
        return op("Add", [op("MatMul", [x, weight]), bias])

    width = HIDDEN // HEADS
    constant("one", np.array([1], dtype=np.int64))
    constant("two", np.array([2], dtype=np.int64))
    constant("zero", np.array([0], dtype=np.int64))
    constant("split_heads", np.array([0, 0, HEADS, width], dtype=np.int64))
    constant("join_heads", np.array([0, 0, HIDDEN], dtype=np.int64))
    constant("scale", np.array(1.0 / np.sqrt(width), dtype=np.float32))
    constant("unit", np.array(1.0, dtype=np.float32))
    constant("blocked", np.array(-1e9, dtype=np.float32))
    constant("tiny", np.array(1e-12, dtype=np.float32))

    # Embeddings: token + position (as many as the batch has tokens) + token type 0.
    words = constant("word", tensors["embeddings.word_embeddings.weight"])
    positions = constant("position", tensors["embeddings.position_embeddings.weight"])
    kind = constant("token_type", tensors["embeddings.token_type_embeddings.weight"][0])
    length = op("Slice", [op("Shape", ["ids"]), "one", "two"])
    x = op("Add", [op("Add", [op("Gather", [words, "ids"]), op("Slice", [positions, "zero", length, "zero"])]), kind])
    x = norm(x, "embeddings.LayerNorm.")
    # Padding takes no attention: -1e9 added to its scores, as in the numpy encoder.
    padding = op("Unsqueeze", [op("Mul", [op("Sub", ["unit", "mask"]), "blocked"]), constant("axes", np.array([1, 2]))])
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."

        def heads(x: str, perm: list[int]) -> str:
            return op("Transpose", [op("Reshape", [x, "split_heads"])], perm=perm)

        query = heads(dense(x, p + "attention.self.query."), [0, 2, 1, 3])
        key = heads(dense(x, p + "attention.self.key."), [0, 2, 3, 1])
        value = heads(dense(x, p + "attention.self.value."), [0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [query, key]), "scale"]), padding])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), value])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), "join_heads"])
        x = norm(op("Add", [x, dense(context, p + "attention.output.dense.")]), p + "attention.output.LayerNorm.")
        hidden = op("Gelu", [dense(x, p + "intermediate.dense.")], approximate="tanh")
        x = norm(op("Add", [x, dense(hidden, p + "output.dense.")]), p + "output.LayerNorm.")
    # Mean over the tokens, then unit length.
    summed = op("ReduceSum", [op("Mul", [x, op("Unsqueeze", ["mask", "two"])]), "one"], keepdims=0)
    pooled = op("Div", [summed, op("Max", [op("ReduceSum", ["mask", "one"], keepdims=1), "unit"])])
    length_of = op("Max", [op("ReduceL2", [pooled, "one"], keepdims=1), "tiny"])
    nodes.append(helper.make_node("Div", [pooled, length_of], ["vectors"], name="vectors"))
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["texts", "tokens"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["texts", "tokens"]),
        ],
        [helper.make_tensor_value_info("vectors", TensorProto.FLOAT, ["texts", HIDDEN])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9  # readable by every ONNX Runtime that knows opset 20
    return bytes(model.SerializeToString())


def texts_like_entries(count: int, seed: int = 3) -> list[str]:
    texts = chat_texts(random.Random(seed))
    return [next(texts) for _ in range(count)]


def onnx_session(model: bytes, threads: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return lambda tokens, mask: session.run(None, {"ids": tokens, "mask": mask})[0]


def int8(model: bytes) -> bytes:
    """``model`` with its weight products quantised to int8, per channel (activations stay float)."""
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "f32.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(model)
        graph = onnx.load(str(source)).graph
        weights = {init.name for init in graph.initializer}
        products = [n.name for n in graph.node if n.op_type == "MatMul" and any(i in weights for i in n.input)]
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, nodes_to_quantize=products, per_channel=True)
        return target.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = texts_like_entries(args.texts)
    model = load_embedder("minilm-l6")
    ways: dict[str, Callable[[], Any]] = {}
    for budget in (512, 1024, 2048):

        def numpy_way(budget: int = budget) -> Any:
            minilm.BATCH_TOKENS = budget
            os.environ[openvino_encoder.SETTING] = "numpy"
            return embed_many(model, texts)

        ways[f"numpy, 2 threads, {budget} tokens a pass"] = numpy_way
    if importlib.util.find_spec("openvino") is not None:

        def openvino_way() -> Any:
            minilm.BATCH_TOKENS = 512
            os.environ.pop(openvino_encoder.SETTING, None)
            return embed_many(model, texts)

        ways["openvino (memd[fast]), 2 threads, 512 tokens a pass"] = openvino_way
    else:
        print("openvino not installed: no memd[fast] row")
    try:
        f32 = model_bytes(minilm.read_safetensors(minilm_folder() / "model.safetensors"))
        sessions = {"float32": f32, "int8": int8(f32)}
    except ImportError:
        print("onnx / onnxruntime not installed: numpy only")
        sessions = {}
    for name, graph in sessions.items():
        for threads in (1, 2):
            forward = onnx_session(graph, threads)

            def onnx_way(forward: Any = forward) -> Any:
                minilm.BATCH_TOKENS = 512
                os.environ[openvino_encoder.SETTING] = "numpy"
                model._forward = forward  # the same batching, this forward pass
                try:
                    with one_blas_thread():
                        return model.embed(texts)
                finally:
                    del model._forward

            ways[f"onnxruntime {name}, {threads} thread(s), 512 tokens a pass"] = onnx_way
    os.environ[openvino_encoder.SETTING] = "numpy"
    reference = embed_many(model, texts)
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    closest: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, way in ways.items():
            start, clock = time.process_time(), time.perf_counter()
            vectors = way()
            cpu[name].append(time.process_time() - start)
            wall[name].append(time.perf_counter() - clock)
            closest[name] = float((vectors * reference).sum(axis=1).min())
    import threadpoolctl

    blas = threadpoolctl.threadpool_info()
    kernel = blas[0].get("architecture", "?") if blas else "?"
    print(f"{len(texts)} texts, {args.rounds} rounds, medians; BLAS kernel {kernel}")
    print(f"{'way':58} {'ms CPU/text':>11} {'texts/CPU s':>11} {'wall s':>7} {'min cosine':>10}")
    for name in ways:
        per_text = statistics.median(cpu[name]) / len(texts) * 1000
        seconds = statistics.median(wall[name])
        print(f"{name:58} {per_text:11.2f} {1000 / per_text:11.1f} {seconds:7.2f} {closest[name]:10.6f}")


if __name__ == "__main__":
    main()
