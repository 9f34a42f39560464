"""Query embeddings in recall (pmm/recall/query_vectors.py): hybrid recall embeds the query
on the query-encoding thread while the keyword rankers search, with the same hits as
embedding it in line; an embedder's error reaches the caller."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pmm.errors import BackendError
from pmm.recall.query_vectors import QueryVectors
from pmm.recall.recaller import Recaller
from pmm.records import NewEvent
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
    called: list[str] = []
    vector, then = vectors.start_then("boom again", lambda v: called.append("then"))
    for future in (then, vector):  # the encoding's error in both; ``then`` never runs
        with pytest.raises(BackendError, match="boom again"):
            future.result()
    assert not called and len(vectors) == 0
    vector, then = vectors.start_then("fine", lambda v: called.append("then") or v.shape)
    assert then.result() == (26,) and called == ["then"]  # the worker goes on serving


class GatedEmbedder(ThreadNotingEmbedder):
    """Embeds a query only once ``gate`` is set (documents at once): the keyword rankers
    finish while the query vector is still pending."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if threading.current_thread().name.startswith("pmm-query-encoder"):
            assert self.gate.wait(10), "recall never read ahead while the query was encoded"
            self.gate.clear()
        return super().embed(texts)


def test_rows_read_while_the_query_is_encoded_give_the_hits_of_in_line(tmp_path: Path) -> None:
    """While the query is still being encoded, recall reads the keyword candidates' rows
    and holds their sessions' terms (SessionRanks.hold); the hits, scores and ranks are
    those of a recall that had its vector first, over a generated log of two users."""
    rng = np.random.default_rng(7)
    vocab = "dog cat Lisbon Oslo nurse piano garden moved sister coffee rain hike".split()
    embedder = GatedEmbedder()
    with EventStore(tmp_path / "pmm.db") as store:
        said = [" ".join(rng.choice(vocab, size=int(rng.integers(3, 9)))) for _ in range(240)]
        events = store.append_many(
            NewEvent("prompt" if n % 2 == 0 else "response", f"{text}{'?' if n % 5 == 0 else '.'}",
                     f"s{n // 30}", "user" if n % 2 == 0 else "assistant", user_id=f"u{n // 120}")
            for n, text in enumerate(said)
        )  # fmt: skip
        vectors = embedder.embed([e.text for e in events])
        rows = [(e.id, v.tobytes()) for e, v in zip(events, vectors, strict=True)]
        store.put_embeddings(embedder.model_name, embedder.dim, rows)
        background = Recaller(store, embedder)  # type: ignore[arg-type]
        inline = Recaller(store, embedder, background_encoding=False)  # type: ignore[arg-type]
        hold = background.session_ranks.hold
        held: list[str] = []

        def hold_then_encode(sessions: Iterable[str]) -> None:
            wanted = list(sessions)
            held.extend(wanted)
            hold(wanted)
            embedder.gate.set()  # only now can the query be encoded

        background.session_ranks.hold = hold_then_encode  # type: ignore[method-assign]
        for query in ("where did my sister move", "dog and cat in Oslo", "rain on the hike?"):
            for user in (None, "u0", "u1"):
                before = len(held)
                background.clear_query_cache()
                got = background.recall(query, k=8, user_id=user)
                assert len(held) > before  # read ahead, then encoded
                if user is not None:  # only her sessions were read: s0-s3 are u0's
                    assert {int(s[1:]) // 4 for s in held[before:]} == {int(user[1:])}
                want = inline.recall(query, k=8, user_id=user)
                assert [(h.event.id, h.score, h.rankers) for h in got] == [
                    (h.event.id, h.score, h.rankers) for h in want
                ]
                assert got and all(user in (None, h.event.user_id) for h in got)
        assert set(held) <= set(background.session_ranks.held)
