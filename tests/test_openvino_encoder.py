"""Bulk embedding through OpenVINO (``memd[fast]``): the same vectors as numpy's, queries
still numpy's, and numpy whenever OpenVINO is turned off or cannot compile."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from memd.index import minilm, openvino_encoder
from memd.index.embedding import embed_many
from memd.index.minilm import BULK_TEXTS, MiniLM
from memd.index.model_files import minilm_folder

pytest.importorskip("openvino")

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful",
    "Dentist cleaning booked for April, before the Kyoto trip",
    "ok",
    "",
    "京都の桜は四月に咲く",
    "lol 😂 same here!!",
    "Mum's hip operation is scheduled for 14 October at St Mary's " * 40,  # past 256 tokens: truncated
    *(
        f"note {i} on {w} and the {v} it needs"
        for i, (w, v) in enumerate(zip(["tea", "bike", "rent"] * 30, ["cup", "tyre", "cheque"] * 30, strict=True))
    ),
]


@pytest.fixture(scope="module")
def model() -> MiniLM:
    # One model of its own: the compiled pass it keeps must not leak into other tests' models.
    return MiniLM(minilm_folder(), verify=False)


def numpy_vectors(model: MiniLM, texts: list[str], monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    with monkeypatch.context() as patch:
        patch.setenv(openvino_encoder.SETTING, "numpy")
        return np.asarray(model.embed(texts))


def test_bulk_vectors_match_numpys(model: MiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(TEXTS) >= BULK_TEXTS
    monkeypatch.delenv(openvino_encoder.SETTING, raising=False)
    compiled = np.asarray(model.embed(TEXTS))
    reference = numpy_vectors(model, TEXTS, monkeypatch)
    assert model._compiled, "OpenVINO is installed: the bulk path must have compiled"
    cosines = (compiled * reference).sum(axis=1)
    # bfloat16 products where the processor has them; float32 elsewhere (then ~1e-7).
    assert cosines.min() > 0.999
    assert np.allclose(np.linalg.norm(compiled, axis=1), 1.0, atol=1e-4)
    # embed_many's threads each get a request of their own, and the same vectors.
    assert np.allclose(embed_many(model, TEXTS * 4, workers=2), np.vstack([compiled] * 4), atol=2e-3)


def test_a_query_is_still_embedded_by_numpy(model: MiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(openvino_encoder.SETTING, raising=False)
    query = ["where did I park the car"]
    alone = model.embed(query)[0]
    with monkeypatch.context() as patch:
        patch.setattr(minilm.MiniLM, "_bulk_forward", lambda self: pytest.fail("a query took the bulk path"))
        assert np.array_equal(model.embed(query)[0], alone)


def test_memd_encoder_numpy_turns_it_off(model: MiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(openvino_encoder.SETTING, "numpy")
    assert not openvino_encoder.wanted()
    assert model._bulk_forward() == model._forward


def test_a_graph_that_will_not_compile_falls_back_to_numpy(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(model: MiniLM, heads: int, eps: float) -> None:
        raise RuntimeError("Exception from src/inference/src/cpp/core.cpp: no CPU plugin")

    monkeypatch.delenv(openvino_encoder.SETTING, raising=False)
    monkeypatch.setattr(openvino_encoder, "compile_forward", refuse)
    fresh = MiniLM(minilm_folder(), verify=False)
    with caplog.at_level(logging.WARNING, logger="memd.index.minilm"):
        first = np.asarray(fresh.embed(TEXTS))
        again = np.asarray(fresh.embed(TEXTS))
    assert np.array_equal(first, numpy_vectors(fresh, TEXTS, monkeypatch))
    assert np.array_equal(first, again)
    warned = [r.getMessage() for r in caplog.records if "OpenVINO" in r.getMessage()]
    assert len(warned) == 1 and "no CPU plugin" in warned[0], "one warning, naming why; not one per call"
