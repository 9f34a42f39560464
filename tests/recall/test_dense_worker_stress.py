"""Hybrid recall with the dense search on the process's one query-encoding thread, under
load: four threads recall from one store (one Recaller, as a Mind shares it) while another
appends and embeds turns, redacts some and then forgets a whole user, and a fifth recalls
from a second store that shares the same worker. No recall raises; no recall started after a
redaction or the forget returned shows the erased text; a user never sees another's turns;
the second store's recalls only ever hold its own turns."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pmm.context.users import user_erasure_ids
from pmm.recall.dense import dense_ids, worker_search
from pmm.recall.query_vectors import QueryVectors
from pmm.recall.recaller import Recaller
from pmm.records import Hit, NewEvent
from pmm.storage.sqlite import EventStore
from tests.recall.test_dense_worker import DIM, VOCAB, LetterEmbedder

ROUNDS = 12
"""Batches the writer appends (a redaction after every third), before the forget."""
READERS = 4
AFTER_FORGET = 6
"""Recalls each reader makes once the forget returned."""
SECRET = "quartzwhisker"
"""A word only the forgotten user's turns hold."""
KINDS = ("prompt", "response")
QUERIES = (
    "where did my sister move",
    f"{SECRET} dog in Oslo",
    "rain on the hike",
    "piano and coffee",
)


def _embed(store: EventStore, embedder: LetterEmbedder, events: list[object]) -> None:
    texts = [e.text for e in events]  # type: ignore[attr-defined]
    vectors = embedder.embed(texts)
    store.put_embeddings(embedder.model_name, DIM, [
        (e.id, v.tobytes()) for e, v in zip(events, vectors, strict=True)  # type: ignore[attr-defined]
    ])  # fmt: skip


def _turns(n: int, start: int, user: str, rng: np.random.Generator) -> list[NewEvent]:
    out = []
    for i in range(start, start + n):
        words = " ".join(rng.choice(VOCAB, size=int(rng.integers(3, 8))))
        text = f"{words} {SECRET}" if user == "u1" else words
        out.append(NewEvent("prompt" if i % 2 == 0 else "response", text,
                            f"{user}-s{i % 3}", "user" if i % 2 == 0 else "assistant",
                            user_id=user))  # fmt: skip
    return out


def run_all(
    reader: Callable[[int], None],
    writer: Callable[[], None],
    other_reader: Callable[[], None],
    errors: list[BaseException],
) -> None:
    """``READERS`` readers, the writer and the other store's reader on threads of their
    own, until all return; the first error any of them caught is raised here."""
    threads = [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
    threads += [threading.Thread(target=writer), threading.Thread(target=other_reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a recall thread hung"
    if errors:
        raise errors[0]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[EventStore, EventStore]]:
    rng = np.random.default_rng(11)
    embedder = LetterEmbedder()
    with EventStore(tmp_path / "a.db") as a, EventStore(tmp_path / "b.db") as b:
        for user in ("u0", "u1"):
            _embed(a, embedder, a.append_many(_turns(60, 0, user, rng)))
        _embed(b, embedder, b.append_many(
            NewEvent("prompt", f"{' '.join(rng.choice(VOCAB, size=5))} bravo", "b-s0", "user")
            for _ in range(80)
        ))  # fmt: skip
        yield a, b


def test_recall_on_many_threads_while_turns_are_added_redacted_and_a_user_forgotten(
    stores: tuple[EventStore, EventStore], searching_threads: list[str]
) -> None:
    store, other = stores
    embedder = LetterEmbedder()
    recaller = Recaller(store, embedder)  # type: ignore[arg-type]
    other_recaller = Recaller(other, embedder)  # type: ignore[arg-type]
    other_ids = set(other.event_ids())
    errors: list[BaseException] = []
    start = threading.Barrier(READERS + 2)
    writer_done = threading.Event()
    redacted: set[int] = set()  # ids whose redaction returned (added after it returned)
    redacted_lock = threading.Lock()
    forgotten: list[int] = []  # u1's ids, set once forget() returned
    forgot = threading.Event()
    after: list[int] = [0] * READERS  # recalls each reader started after the forget
    vectors = QueryVectors(embedder)  # type: ignore[arg-type]
    busy = [0] * READERS  # worker searches that found the index busy
    owned = {u: set(store.event_ids(user_id=u)) for u in ("u0", "u1")}  # before embedded
    owned_lock = threading.Lock()

    def check(hits: list[Hit], user: str | None, erased: set[int], gone: bool) -> None:
        for hit in hits:
            assert hit.event.id not in erased, f"redacted event {hit.event.id} recalled"
            if user is not None:
                assert hit.event.user_id == user, "another user's turn recalled"
            if gone:
                assert SECRET not in hit.event.text, "a forgotten user's text recalled"
                assert hit.event.id not in forgotten, "a forgotten user's event recalled"

    def reader(n: int) -> None:
        try:
            start.wait()
            round_ = 0
            while not forgot.is_set() or after[n] < AFTER_FORGET:
                gone = forgot.is_set()  # read before the recall starts
                with redacted_lock:
                    erased = set(redacted)
                if gone:
                    after[n] += 1
                query = QUERIES[(n + round_) % len(QUERIES)]
                if round_ % 5 == n % 5:
                    recaller.clear_query_cache()  # encoded, then searched, on the worker
                user = (None, "u0", "u1", None)[n]
                check(recaller.recall(query, k=40, user_id=user), user, erased, gone)
                # the dense list itself, searched on the worker: erased ids never in it
                search = worker_search(store, lambda: recaller.index, 60, kinds=KINDS,
                                       user_id=user)  # fmt: skip
                assert search is not None
                vector, found = vectors.start_then(query, search)
                listed = found.result()  # None: the index was busy, searched in line then
                if listed is None:
                    busy[n] += 1
                    listed = dense_ids(store, embedder, lambda: recaller.index, vector.result(),  # type: ignore[arg-type]
                                       60, kinds=KINDS, user_id=user)  # fmt: skip
                dense = set(listed)
                assert not dense & erased, "a redacted event's vector searched"
                assert not (gone and dense & set(forgotten)), "a forgotten vector searched"
                with owned_lock:
                    assert user is None or dense <= owned[user], "another user's vector searched"
                round_ += 1
        except BaseException as error:
            errors.append(error)

    def writer() -> None:
        rng = np.random.default_rng(5)
        try:
            start.wait()
            for round_ in range(ROUNDS):
                for user in ("u0", "u1"):
                    added = store.append_many(_turns(4, 100 + round_ * 4, user, rng))
                    with owned_lock:
                        owned[user].update(e.id for e in added)
                    _embed(store, embedder, added)
                if round_ % 3 == 2:
                    target = int(store.event_ids(user_id="u0", kinds=("prompt",))[round_])
                    store.redact(target, reason="stress")
                    with redacted_lock:
                        redacted.add(target)
            ids = user_erasure_ids(store, "u1", None, None, None)
            assert ids
            store.forget(event_ids=ids, identifiers_of="u1", reason="account deleted")
            forgotten.extend(ids)
            forgot.set()
        except BaseException as error:
            errors.append(error)
            forgot.set()
        finally:
            writer_done.set()

    def other_reader() -> None:
        try:
            start.wait()
            while not writer_done.is_set():
                for hit in other_recaller.recall("dog cat bravo", k=5):
                    assert hit.event.id in other_ids and "bravo" in hit.event.text
                other_recaller.clear_query_cache()
        except BaseException as error:
            errors.append(error)

    run_all(reader, writer, other_reader, errors)
    assert forgotten and all(count >= AFTER_FORGET for count in after)
    assert any(name.startswith("pmm-query-encoder") for name in searching_threads)
    # the erased user is gone for good, and the dense ranker still answers the others
    assert not recaller.recall(SECRET, k=10, user_id="u1")
    hits = recaller.recall("where did my sister move", k=8, user_id="u0")
    assert hits and any("dense" in h.rankers for h in hits)


def test_two_minds_recall_on_many_threads_while_one_digests_embeds_and_forgets_a_user(
    tmp_path: Path, searching_threads: list[str]
) -> None:
    """The same through :class:`~pmm.Mind`, whose background worker digests and embeds the
    turns (adding vectors) while four threads recall, and a second Mind on another file
    recalls through the same query-encoding thread. After ``forget(user_id=...)`` returned,
    no recall shows her text or her events; a user never sees another's turns."""
    from pmm import Mind

    rng = np.random.default_rng(7)

    def mind(name: str) -> Mind:
        return Mind(
            str(tmp_path / name), enable_summary=True, enable_embeddings=True,
            summary_mode="background", summarizer="heuristic",
            embedder=LetterEmbedder(),  # type: ignore[arg-type]
        )  # fmt: skip

    def say(m: Mind, user: str, n: int) -> set[int]:
        ids: set[int] = set()
        for _ in range(n):
            words = " ".join(rng.choice(VOCAB, size=5))
            extra = f" {SECRET}" if user == "u1" else (" bravo" if user == "b" else "")
            pair = m.remember_turn(f"{words}{extra}", f"noted {words}{extra}",
                                   session_id=f"{user}-t",
                                   user_id=None if user == "b" else user)  # fmt: skip
            ids.update(e.id for e in pair)
        return ids

    errors: list[BaseException] = []
    forgot = threading.Event()
    forgotten: set[int] = set()
    with mind("a.db") as a, mind("b.db") as b:
        said = {u: say(a, u, 10) for u in ("u0", "u1")}
        other_ids = say(b, "b", 10)
        assert a.flush(20) and b.flush(20)
        start = threading.Barrier(READERS + 2)
        after = [0] * READERS

        def reader(n: int) -> None:
            user = (None, "u0", "u1", "u0")[n]
            try:
                start.wait()
                round_ = 0
                while not forgot.is_set() or after[n] < AFTER_FORGET:
                    gone = forgot.is_set()  # read before the recall starts
                    after[n] += gone
                    for hit in a.recall(QUERIES[(n + round_) % len(QUERIES)], k=20, user_id=user):
                        assert user is None or hit.event.user_id == user, "another user's turn"
                        if gone:
                            assert hit.event.id not in forgotten, "a forgotten event recalled"
                            assert SECRET not in hit.event.text + (hit.event.summary or "")
                    round_ += 1
            except BaseException as error:
                errors.append(error)

        def writer() -> None:
            try:
                start.wait()
                for _ in range(4):
                    said["u0"] |= say(a, "u0", 2)
                    said["u1"] |= say(a, "u1", 2)
                report = a.forget(user_id="u1", reason="account deleted")
                forgotten.update(report.erased)
                forgot.set()
                say(a, "u0", 4)  # digested and embedded while the readers go on
            except BaseException as error:
                errors.append(error)
                forgot.set()

        def other_reader() -> None:
            try:
                start.wait()
                while not forgot.is_set() or sum(after) < READERS * AFTER_FORGET:
                    for hit in b.recall("dog cat bravo", k=5):
                        assert hit.event.id in other_ids and "bravo" in hit.event.text
            except BaseException as error:
                errors.append(error)

        run_all(reader, writer, other_reader, errors)
        assert said["u1"] <= forgotten
        assert a.flush(20)
        assert not a.recall(SECRET, k=10, user_id="u1")
        assert all(SECRET not in h.event.text for h in a.recall(SECRET, k=30))
    assert any(name.startswith("pmm-query-encoder") for name in searching_threads)
