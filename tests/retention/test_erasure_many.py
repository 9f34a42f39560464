"""Erasing several sessions in one request (``session_ids``: every thread of a user): one
scrub of the file however many sessions, the same byte-level guarantee as ``forget
--session``, and full-text indexes that answer exactly as a full rebuild would."""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_erasure import HashEmbedder, file_bytes

import pmm.storage.sqlite.erasure as sqlite_erasure
from pmm import Mind
from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.storage.sqlite import EventStore

WORDS = "lisbon coffee train garden budget novel meeting river piano ticket harbour".split()


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[Mind]:
    with Mind(
        tmp_path / "pmm.db",
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        enable_embeddings=True,
        embedder=HashEmbedder(),
        detect_contradictions=False,
    ) as m:
        yield m


def secret(user: int, thread: int) -> str:
    return f"zq{user:03d}secret{thread}x"


def fill(mind: Mind, users: int = 12, threads: int = 3, rounds: int = 3) -> None:
    """Turns of every user's threads, interleaved, digested and embedded in rounds so
    that rows are updated and moved between pages, each turn holding its thread's secret."""
    rng = random.Random(7)
    for round_ in range(rounds):
        for user in range(users):
            for thread in range(threads):
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40)))
                mind.remember_turn(
                    f"{words} my code is {secret(user, thread)} (round {round_})",
                    f"Noted {secret(user, thread)}: {words}",
                    session_id=f"u{user}/t{thread}",
                )
        mind.dream()
        mind.store.sync_search_index()


def holding(db: Path, tokens: list[str]) -> list[str]:
    data = file_bytes(db)
    return [t for t in tokens if t.encode() in data]


def search_answers(store: EventStore) -> dict[tuple[str, str], list[int]]:
    """Every key's hits for every word: what the indexes answer."""
    found = {}
    for key in ("turn", "window"):
        for word in [*WORDS, "noted", "code", secret(6, 1), secret(1, 1)]:
            found[key, word] = sorted(i for i, _ in store.search_text(word, key=key, limit=10_000))
    return found


def test_a_user_s_threads_go_in_one_request_with_one_scrub(
    mind: Mind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "pmm.db"
    fill(mind)
    scrubs: list[bool] = []
    real_scrub = sqlite_erasure.scrub

    def counted(store: EventStore) -> bool:
        scrubs.append(real_scrub(store))
        return scrubs[-1]

    monkeypatch.setattr(sqlite_erasure, "scrub", counted)
    threads = [f"u3/t{t}" for t in range(3)]
    ids = sorted(i for s in threads for i in mind.store.event_ids(session_id=s))
    others = {
        s: mind.store.event_ids(session_id=s)
        for s in (f"u{u}/t{t}" for u in range(12) if u != 3 for t in range(3))
    }
    with sqlite3.connect(db) as raw:
        vectors = raw.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    assert set(holding(db, [secret(3, t) for t in range(3)])) == {secret(3, t) for t in range(3)}

    report = mind.forget(session_ids=threads, reason="account deleted")

    assert scrubs == [True]  # one rewrite of the file for the three threads
    assert report.erased == ids and report.wal_truncated
    assert sorted(m.session_id or "" for m in report.markers) == threads
    assert holding(db, [secret(3, t) for t in range(3)]) == []
    kept = [secret(u, t) for u in range(12) if u != 3 for t in range(3)]
    assert holding(db, kept) == kept
    for session, event_ids in others.items():  # every other thread untouched
        assert mind.store.event_ids(session_id=session) == event_ids
        assert all(mind.store.get(i).content for i in event_ids[:4])
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT count(*) FROM embeddings").fetchone()[0] == vectors - len(
            [i for i in ids if mind.store.get(i).kind in ("prompt", "response")]
        )
        assert not {r[0] for r in raw.execute("SELECT event_id FROM embeddings")} & set(ids)
    assert mind.verify().ok
    assert mind.recall(secret(3, 1), k=5, session_id="u3/t1") == []
    assert mind.recall(secret(4, 1), k=5, session_id="u4/t1")


def test_the_indexes_answer_as_a_full_rebuild_would(mind: Mind, tmp_path: Path) -> None:
    fill(mind, users=8)
    mind.forget(session_ids=["u1/t0", "u1/t2", "u5/t1"], reason="r")
    mind.forget(match=secret(6, 0), reason="r")  # single turns: neighbours' windows change
    store = mind.store
    targeted = search_answers(store)
    with sqlite3.connect(tmp_path / "pmm.db") as raw:
        raw.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
    with store._lock, store._write() as conn:
        store.rebuild_search_indexes(conn)
    assert search_answers(store) == targeted
    assert targeted["turn", "code"] and targeted["window", "lisbon"]
    erased = set(mind.store.event_ids(session_id="u1/t0"))
    assert erased and not erased & set(targeted["window", "lisbon"])


def test_compressed_turns_leave_no_byte(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    with Mind(db, enable_summary=False) as mind:
        fill(mind, users=4, rounds=2)
        assert mind.compress(after="0").compressed
        mind.forget(session_ids=["u2/t0", "u2/t1", "u2/t2"], reason="r")
        assert mind.verify().ok
        assert mind.recall("lisbon", k=3, session_id="u1/t1")
    assert holding(db, [secret(2, t) for t in range(3)]) == []


def test_bad_session_lists_change_nothing(mind: Mind) -> None:
    fill(mind, users=2, rounds=1)
    head = mind.store.head()
    for bad in ("u0/t0", ["u0/t0", ""], ["u0/t0", 3], {"u0/t0": 1}):
        with pytest.raises(InvalidInputError):
            mind.forget(session_ids=bad, reason="r")  # type: ignore[arg-type]
    with pytest.raises(EventNotFoundError, match="nothing to forget"):
        mind.forget(session_ids=[], reason="r")
    with pytest.raises(EventNotFoundError, match="'nobody', 'none'"):
        mind.forget(session_ids=["nobody", "none"], reason="r")
    assert mind.store.head() == head
    # a session named twice, and by session_id too, is erased once
    report = mind.forget(session_id="u0/t0", session_ids=["u0/t0", "u0/t0"], reason="r")
    assert [m.session_id for m in report.markers] == ["u0/t0"] and mind.verify().ok
