"""Query embeddings in recall (pmm/recall/query_vectors.py): hybrid recall embeds the query
on the query-encoding thread while the keyword rankers search, with the same hits as
embedding it in line; an embedder's error reaches the caller."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pmm.errors import BackendError
from pmm.recall.query_vectors import QueryVectors
from pmm.recall.recaller import Recaller
from pmm.storage.sqlite import EventStore


class ThreadNotingEmbedder:
    """Vectors from the text's letters; notes the thread that embeds each text."""

    model_name = "test/threads"
    dim = 26
    device = "cpu"

    def __init__(self, fail_on: str = "") -> None:
        self.threads: list[str] = []
        self.fail_on = fail_on

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.threads += [threading.current_thread().name for _ in texts]
        out = np.full((len(texts), self.dim), 0.01, dtype=np.float32)
        for row, text in enumerate(texts):
            if self.fail_on and self.fail_on in text:
                raise BackendError(f"cannot embed {text!r}")
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[row, ord(ch) - 97] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


TURNS = ["I live in Lisbon with my cat Pixel.", "My sister Ana is a nurse.",
         "We adopted a puppy called Bolt.", "The weather was grey all week."]  # fmt: skip


def _store(path: Path, embedder: ThreadNotingEmbedder) -> EventStore:
    store = EventStore(path)
    for n, text in enumerate(TURNS):
        event = store.append("prompt", text, session_id=f"s{n % 2}", role="user")
        store.put_embeddings(embedder.model_name, embedder.dim,
                             [(event.id, embedder.embed([text])[0].tobytes())])  # fmt: skip
    embedder.threads.clear()
    return store


def test_hybrid_recall_embeds_on_the_worker_with_the_hits_of_in_line(tmp_path: Path) -> None:
    embedder = ThreadNotingEmbedder()
    with _store(tmp_path / "pmm.db", embedder) as store:
        background = Recaller(store, embedder)  # type: ignore[arg-type]
        inline = Recaller(store, embedder, background_encoding=False)  # type: ignore[arg-type]
        for query in ("where does my cat live?", "what is the puppy called", "grey"):
            got = background.recall(query, k=3)
            assert embedder.threads[-1].startswith("pmm-query-encoder")
            want = inline.recall(query, k=3)
            assert embedder.threads[-1] == threading.current_thread().name
            assert [(h.event.id, h.score, h.rankers) for h in got] == [
                (h.event.id, h.score, h.rankers) for h in want
            ]
        # semantic mode has nothing to overlap: in line; a cached query is not embedded again
        background.recall("Lisbon", k=1, mode="semantic")
        assert embedder.threads[-1] == threading.current_thread().name
        count = len(embedder.threads)
        background.recall("grey", k=3)
        assert len(embedder.threads) == count


def test_an_embedder_error_reaches_the_caller_and_nothing_is_cached(tmp_path: Path) -> None:
    embedder = ThreadNotingEmbedder(fail_on="boom")
    with _store(tmp_path / "pmm.db", embedder) as store:
        for background in (True, False):
            recaller = Recaller(store, embedder, background_encoding=background)  # type: ignore[arg-type]
            with pytest.raises(BackendError, match="boom"):
                recaller.recall("boom where is Lisbon", k=3)
        assert recaller.recall("where is Lisbon", k=1)[0].event.content == TURNS[0]
    vectors = QueryVectors(embedder, size=2)  # type: ignore[arg-type]
    with pytest.raises(BackendError):
        vectors.start("boom").result()
    assert len(vectors) == 0 and vectors.cached("boom") is None
    with pytest.raises(BackendError):
        vectors.start("boom", background=False)
