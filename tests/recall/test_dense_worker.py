"""Hybrid recall's in-memory dense search on the query-encoding thread (pmm/recall/dense.py):
the same list as the search in line, for every scope; the store read on the calling thread
only; an error raised there reaches the caller; ``background_encoding=False`` and semantic
mode search in line. (A store that searches vectors itself keeps the search on the calling
thread: tests/storage/postgres/test_pgvector.py.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pmm.embed.index import VectorIndex
from pmm.errors import InvalidInputError
from pmm.recall.dense import dense_ids, worker_search
from pmm.recall.query_vectors import QueryVectors
from pmm.recall.recaller import Recaller
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

DIM = 26
VOCAB = "dog cat Lisbon Oslo nurse piano garden moved sister coffee rain hike".split()


class LetterEmbedder:
    """Vectors from the text's letters; a text holding ``zero`` embeds as the zero vector
    (which the vector index refuses: an error raised by the search, not by the model)."""

    model_name = "test/letters"
    dim = DIM
    device = "cpu"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), DIM), 0.01, dtype=np.float32)
        for row, text in enumerate(texts):
            if "zero" in text:
                out[row] = 0.0
                continue
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[row, ord(ch) - 97] += 1.0
            out[row] /= np.linalg.norm(out[row])
        return out


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    """240 turns of two users in eight sessions, every one embedded."""
    rng = np.random.default_rng(3)
    embedder = LetterEmbedder()
    with EventStore(tmp_path / "pmm.db") as store:
        events = store.append_many(
            NewEvent("prompt" if n % 2 == 0 else "response",
                     " ".join(rng.choice(VOCAB, size=int(rng.integers(3, 9)))),
                     f"s{n // 30}", "user" if n % 2 == 0 else "assistant", user_id=f"u{n // 120}")
            for n in range(240)
        )  # fmt: skip
        vectors = embedder.embed([e.text or "" for e in events])
        store.put_embeddings(embedder.model_name, DIM, [
            (e.id, v.tobytes()) for e, v in zip(events, vectors, strict=True)
        ])  # fmt: skip
        yield store


def note_store_readers(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names of the threads that read ``EventStore`` from now on (filled as they do)."""
    readers: set[str] = set()
    read = EventStore._read

    def noted(self: EventStore, *args: Any, **kwargs: Any) -> Any:
        readers.add(threading.current_thread().name)
        return read(self, *args, **kwargs)

    monkeypatch.setattr(EventStore, "_read", noted)
    return readers


@pytest.fixture(name="store_readers")
def store_readers_fixture(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """:func:`note_store_readers` from the test's start."""
    return note_store_readers(monkeypatch)


@pytest.mark.parametrize("quantized_min", [0, 10**9])  # sign bits first / exact only
def test_the_worker_search_is_the_search_in_line_for_every_scope(
    store: EventStore, quantized_min: int
) -> None:
    embedder = LetterEmbedder()
    index = VectorIndex(store, embedder.model_name, DIM, quantized_min=quantized_min,
                        shortlist_min=40)  # fmt: skip
    kinds = ("prompt", "response")
    query = "my sister moved to Oslo"
    vector = embedder.embed([query])[0]
    for session, user in ((None, None), ("s2", None), (None, "u1"), ("s5", "u1"), ("s1", "u1")):
        for excluded in (set(), {5, 17, 121, 200}):
            pool = QueryVectors(embedder)  # type: ignore[arg-type]  (empty: encoded first)
            search = worker_search(store, lambda: index, 20, session_id=session, kinds=kinds,
                                   excluded=excluded, user_id=user)  # fmt: skip
            assert search is not None
            want = dense_ids(store, embedder, lambda: index, vector, 20, session_id=session,  # type: ignore[arg-type]
                             kinds=kinds, excluded=excluded, user_id=user)  # fmt: skip
            vector_future, found = pool.start_then(query, search)
            assert found.result() == want  # embedded, then searched on the worker
            assert vector_future.result().tolist() == vector.tolist()
            assert search(vector) == want  # on this thread
            if (session, user) == ("s1", "u1"):  # u1's turns are s4-s7: none here
                assert want == []
            else:
                assert len(want) == 20 and not excluded & set(want)


def test_hybrid_recall_searches_on_the_worker_with_the_hits_of_in_line(
    store: EventStore, searching_threads: list[str]
) -> None:
    embedder = LetterEmbedder()
    background = Recaller(store, embedder)  # type: ignore[arg-type]
    inline = Recaller(store, embedder, background_encoding=False)  # type: ignore[arg-type]
    for query in ("where did my sister move", "dog and cat in Oslo", "rain on the hike?"):
        for user in (None, "u0", "u1"):
            for cold in (True, False):  # encoded then searched there; cached: searched there
                if cold:
                    background.clear_query_cache()
                got = background.recall(query, k=8, user_id=user, exclude_ids=[4, 130])
                assert searching_threads[-1].startswith("pmm-query-encoder")
                want = inline.recall(query, k=8, user_id=user, exclude_ids=[4, 130])
                assert searching_threads[-1] == threading.current_thread().name
                assert [(h.event.id, h.score, h.rankers) for h in got] == [
                    (h.event.id, h.score, h.rankers) for h in want
                ]
                assert any("dense" in h.rankers for h in got)
                assert all(user in (None, h.event.user_id) for h in got)
    background.recall("Lisbon", k=3, mode="semantic")  # nothing to overlap: in line
    assert searching_threads[-1] == threading.current_thread().name


def test_the_store_is_read_on_the_calling_thread_only(
    store: EventStore, store_readers: set[str], searching_threads: list[str]
) -> None:
    """What the search needs from the store (new vectors, the user's ids, the kinds' rows)
    is read before it is handed over: the worker never touches the connection."""
    recaller = Recaller(store, LetterEmbedder())  # type: ignore[arg-type]
    for user in (None, "u1"):
        recaller.clear_query_cache()
        assert recaller.recall("my sister the nurse", k=5, user_id=user)
        assert searching_threads[-1].startswith("pmm-query-encoder")
    assert store_readers == {threading.current_thread().name}


def test_an_error_of_the_worker_search_reaches_the_caller(
    store: EventStore, searching_threads: list[str]
) -> None:
    for background in (True, False):
        recaller = Recaller(store, LetterEmbedder(), background_encoding=background)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="finite and non-zero"):
            recaller.recall("zero in on Lisbon", k=3)
        on_worker = searching_threads[-1].startswith("pmm-query-encoder")
        assert on_worker is background
        with pytest.raises(InvalidInputError, match="finite and non-zero"):  # cached: again
            recaller.recall("zero in on Lisbon", k=3)
        assert recaller.recall("Lisbon", k=1)  # the recaller still works


def test_the_worker_search_reads_no_store_after_another_thread_refreshed_the_index(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors that came in after the search was made (another thread's refresh took them)
    have kinds only the store knows: the worker leaves the search to the caller (None)."""
    embedder = LetterEmbedder()
    index = VectorIndex(store, embedder.model_name, DIM)
    kinds = ("prompt", "response")
    vector = embedder.embed(["my sister moved to Oslo"])[0]
    search = worker_search(store, lambda: index, 10, kinds=kinds)
    assert search is not None
    [added] = store.append_many([NewEvent("prompt", "sister moved Oslo", "s9", "user",
                                          user_id="u1")])  # fmt: skip
    store.put_embeddings(
        embedder.model_name, DIM, [(added.id, embedder.embed([added.text or ""])[0].tobytes())]
    )
    refresher = threading.Thread(target=index.refresh)  # another recall's refresh, say
    refresher.start()
    refresher.join()
    readers = note_store_readers(monkeypatch)
    out: list[list[int] | None] = []
    searching = threading.Thread(target=lambda: out.append(search(vector)), name="searching")
    searching.start()
    searching.join()
    assert out == [None] and "searching" not in readers
    assert search(vector) is None  # on any thread: the caller searches in line instead,
    assert added.id in dense_ids(store, embedder, lambda: index, vector, 10, kinds=kinds)  # type: ignore[arg-type]


class GatedEmbedder(LetterEmbedder):
    """:class:`LetterEmbedder` whose embedding of a text holding ``gated`` says so
    (``entered``) and waits for ``gate``: the test decides when the worker goes on."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if any("gated" in t for t in texts):
            self.entered.set()
            if not self.gate.wait(30):
                raise RuntimeError("the test never opened the gate")
        return super().embed(texts)


def test_a_store_held_up_does_not_hold_up_the_recall_of_another_store(
    store: EventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query-encoding thread is the process's one. Store A's search there finds A's
    index held by a refresh that waits for A's store (as while an erasure scrubs A's file):
    it leaves the search to A's recall, which searches in line, and store B's recall,
    queued behind it on that thread, is answered meanwhile."""
    embedder = GatedEmbedder()
    a = Recaller(store, embedder)  # type: ignore[arg-type]
    query = "gated: where did my sister move"
    want = Recaller(store, LetterEmbedder(), background_encoding=False).recall(query, k=6)  # type: ignore[arg-type]
    assert a.index is not None
    a.index.refresh()  # loaded: A's recall reads nothing new before handing its search over
    assert len(a.index) == 240
    refreshing = threading.Event()
    version = store.data_version

    def noted() -> tuple[int, int]:
        if threading.current_thread().name == "refresher":
            refreshing.set()
        return version()

    monkeypatch.setattr(store, "data_version", noted)
    got: dict[str, list[Any]] = {}
    with EventStore(tmp_path / "b.db") as other:
        [b_event] = other.append_many([NewEvent("prompt", "my sister is a nurse", "b1", "user")])
        other.put_embeddings(
            embedder.model_name,
            DIM,
            [(b_event.id, embedder.embed([b_event.text or ""])[0].tobytes())],
        )
        b = Recaller(other, LetterEmbedder())  # type: ignore[arg-type]
        recall_a = threading.Thread(target=lambda: got.setdefault("a", a.recall(query, k=6)))
        recall_a.start()
        assert embedder.entered.wait(10)  # A's query is being embedded: its search is next
        with store._lock:  # stands in for an erasure, which holds it while it scrubs
            refresher = threading.Thread(target=a.index.refresh, name="refresher")
            refresher.start()  # takes A's index lock, then waits for A's store
            assert refreshing.wait(10)
            embedder.gate.set()  # the worker goes on to A's search
            recall_b = threading.Thread(
                target=lambda: got.setdefault("b", b.recall("sister nurse", k=3))
            )
            recall_b.start()
            recall_b.join(timeout=10)  # a deadlock guard, not a timing: it returns at once
            assert not recall_b.is_alive(), "store B's recall waited for store A's store"
        for thread in (recall_a, refresher):
            thread.join(timeout=10)
            assert not thread.is_alive()
    assert [h.event.id for h in got["b"]] == [b_event.id]
    assert [(h.event.id, h.score, h.rankers) for h in got["a"]] == [
        (h.event.id, h.score, h.rankers) for h in want
    ]
