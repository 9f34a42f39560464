"""UserRanker: in-memory BM25 of all of one user's threads, checked against the session
ranker it is built from (same scores over the same turns) and the FTS5 path it stands in
for, never reaching another user's turns, and kept in step with the log (this process's
writes, other processes' writes, erasure)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from pmm import Mind
from pmm.recall.recaller import Recaller
from pmm.recall.session_index import SessionRanker
from pmm.recall.user_index import UserRanker
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

TURNS = ("prompt", "response")
WORDS = "apple boat cider dune ember fjord grove harbor island jetty kelp lagoon".split()


def turn(text: str, session: str, user: str, kind: str = "prompt") -> NewEvent:
    role = "user" if kind == "prompt" else "assistant"
    return NewEvent(kind, text, session, role, None, None, user)


def ids(ranker: UserRanker, query: str, user: str, key: str = "window") -> list[int]:
    return [i for i, _ in ranker.search(query, user_id=user, key=key, limit=50)]


def test_one_thread_scores_as_the_session_ranker(tmp_path: Path) -> None:
    """A user with one thread holds exactly that session's documents: same scores."""
    rng = random.Random(3)
    with EventStore(tmp_path / "one.db") as store:
        store.append_many(
            [
                turn(" ".join(rng.sample(WORDS, 4)), "t", "ana", rng.choice(("prompt", "response")))
                for _ in range(40)
            ]
        )
        users, sessions = UserRanker(store), SessionRanker(store)
        for query in ("apple kelp", "harbor", "island dune grove"):
            for key in ("turn", "window"):
                mine = users.search(query, user_id="ana", key=key, limit=20)
                assert mine
                assert mine == sessions.search(query, session_id="t", key=key, limit=20)


def test_every_thread_of_hers_and_nobody_elses(tmp_path: Path) -> None:
    with EventStore(tmp_path / "two.db") as store:
        a1, _ = store.append_many(
            [turn("my kayak is red", "ana/1", "ana"), turn("nice", "ana/1", "ana", "response")]
        )
        (a2,) = store.append_many([turn("the kayak club meets Friday", "ana/2", "ana")])
        (b1,) = store.append_many([turn("kayak kayak zanzibar", "bob/1", "bob")])
        (n1,) = store.append_many([NewEvent("prompt", "kayak without a user", "x", "user")])
        ranker = UserRanker(store)
        assert set(ids(ranker, "kayak", "ana", "turn")) == {a1.id, a2.id}
        assert ids(ranker, "zanzibar", "ana") == []
        assert ids(ranker, "kayak", "bob", "turn") == [b1.id]
        assert ids(ranker, "kayak", "nobody") == []
        assert n1.id not in ids(ranker, "kayak", "ana")
        # a window never reaches across threads: ana/2's turn is alone in its window
        held = ranker._users["ana"]
        assert held.threads["ana/2"].members[a2.id] == (a2.id,)
        # the same ids as the full-text index's user-scoped search
        fts = store.search_text("kayak", user_id="ana", key="turn", kinds=("prompt", "response"))
        assert {i for i, _ in fts} == {a1.id, a2.id}


def test_incremental_equals_a_fresh_build(tmp_path: Path) -> None:
    """Appends to several threads (with clear markers) taken at the write give the same
    postings as a user read from scratch."""
    rng = random.Random(5)
    path = tmp_path / "inc.db"
    with Mind(str(path)) as mind:
        mind.remember("apple boat", role="user", session_id="ana/0", user_id="ana")
        mind.context("ana/0", "apple", user_id="ana")  # builds the recaller
        ranker = mind._get_recaller().user_ranker
        assert ranker is not None
        ranker.search("apple", user_id="ana")
        for step in range(60):
            thread = f"ana/{rng.randrange(3)}"
            if rng.random() < 0.1:
                mind.clear(session_id=thread, user_id="ana")
            else:
                mind.remember_turn(
                    " ".join(rng.sample(WORDS, 3)), "ok", session_id=thread, user_id="ana"
                )
            if step % 20 == 19:
                fresh = UserRanker(mind.store)
                fresh.search("apple", user_id="ana")
                mine, theirs = ranker._users["ana"], fresh._users["ana"]
                assert mine.max_id == theirs.max_id == mind.store.last_id()
                for key in ("turns", "windows"):
                    assert getattr(mine, key).postings == getattr(theirs, key).postings
                    assert getattr(mine, key).lengths == getattr(theirs, key).lengths
        assert ranker.builds == 1  # every write was taken as given


def test_bounded_and_used_by_recall(tmp_path: Path) -> None:
    with EventStore(tmp_path / "many.db") as store:
        for n in range(5):
            store.append_many([turn(f"topic number{n} kayak", f"u{n}/t", f"u{n}")])
        ranker = UserRanker(store, max_users=2)
        for n in range(5):
            assert len(ids(ranker, "kayak", f"u{n}")) == 1
        assert list(ranker._users) == ["u3", "u4"]
        by_turns = UserRanker(store, max_turns=2)
        for n in (0, 1, 2):
            ids(by_turns, "kayak", f"u{n}")
        assert list(by_turns._users) == ["u1", "u2"]  # one turn each
        one = UserRanker(store, max_turns=0)
        assert len(ids(one, "kayak", "u4")) == 1 and list(one._users) == ["u4"]
        recaller = Recaller(store)
        assert recaller.user_ranker is not None
        hits = recaller.recall("kayak", k=3, user_id="u2", mode="keyword")
        assert [h.event.user_id for h in hits] == ["u2"]
        assert recaller.user_ranker.builds == 1
        plain = Recaller(store, user_ranker=False)
        assert plain.user_ranker is None
        assert [h.event.id for h in plain.recall("kayak", k=3, user_id="u2", mode="keyword")] == [
            h.event.id for h in hits
        ]


def test_erasure_drops_her_words_and_other_processes_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "erase.db"
    with Mind(str(path)) as mind:
        secret, _ = mind.remember_turn(
            "my passport is zq123", "noted", session_id="ana/1", user_id="ana"
        )
        mind.remember_turn("I like kayaks", "ok", session_id="ana/2", user_id="ana")
        mind.context("ana/2", "kayaks", user_id="ana")
        ranker = mind._get_recaller().user_ranker
        assert ranker is not None
        assert ids(ranker, "zq123", "ana", "turn") == [secret.id]
        script = (
            "import sys; from pmm.storage.sqlite import EventStore\n"
            "from pmm.records import NewEvent\n"
            "with EventStore(sys.argv[1]) as s:\n"
            "    print(s.append_many([NewEvent('prompt', 'a blue kayak', 'ana/3', 'user',"
            " None, None, 'ana')])[0].id)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
        )
        other = int(done.stdout)
        assert other in ids(ranker, "kayak", "ana", "turn")
        mind.forget(session_id="ana/1", user_id="ana", reason="asked")
        assert ids(ranker, "zq123", "ana", "turn") == []
        assert ids(ranker, "zq123", "ana") == []
        assert other in ids(ranker, "kayak", "ana", "turn")


def test_a_thread_assigned_to_her_is_searched_at_once(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "assign.db")) as mind:
        old = mind.remember("my kayak is in the garage", role="user", session_id="before-users")
        mind.remember("I like kayaks", role="user", session_id="ana/1", user_id="ana")
        mind.recall("kayak", 5, user_id="ana", mode="keyword")
        ranker = mind._get_recaller().user_ranker
        assert ranker is not None
        assert old.id not in ids(ranker, "kayak", "ana", "turn")
        mind.assign_user("before-users", "ana")
        assert old.id in ids(ranker, "kayak", "ana", "turn")
        assert ranker.builds == 2
        with EventStore(tmp_path / "assign.db") as elsewhere:  # a later write, elsewhere
            elsewhere.append_many([turn("a kayak trip", "ana/1", "ana")])
        assert len(ids(ranker, "kayak", "ana", "turn")) == 3
        assert ranker.builds == 2  # the assignment, seen once, is not read again


def test_digest_key_ranks_as_fts5_does_over_one_user(tmp_path: Path) -> None:
    """The digest key (summary and keywords only): with the user alone in the file, the
    same ids in the same order (ties by id) as the full-text index's ``key="digest"``
    search, scores within 2% (FTS5 counts one more tag token per row: the user's)."""
    rng = random.Random(8)
    with EventStore(tmp_path / "digest.db") as store:
        stored = store.append_many(
            [
                turn(" ".join(rng.sample(WORDS, 5)), f"ana/{n % 3}", "ana", TURNS[n % 2])
                for n in range(60)
            ]
        )
        store.set_digests(
            [
                (e.id, " ".join(rng.sample(WORDS, 2)), rng.sample(WORDS, 2), "rules")
                for e in stored[::2]
            ]
        )
        ranker = UserRanker(store)
        digested = {e.id for e in stored[::2]}
        for query in ("apple", "kelp harbor", "lagoon dune grove", "zanzibar"):
            mine = ranker.search(query, user_id="ana", key="digest", kinds=TURNS, limit=60)
            fts = store.search_text(query, user_id="ana", key="digest", kinds=TURNS, limit=60)
            assert [i for i, _ in sorted(mine, key=lambda h: (-round(h[1], 9), h[0]))] == [
                i for i, _ in sorted(fts, key=lambda h: (-round(h[1], 9), h[0]))
            ], query
            theirs = dict(fts)
            assert all(abs(s - theirs[i]) <= 0.02 * abs(theirs[i]) for i, s in mine), query
            assert {i for i, _ in mine} <= digested  # content alone never matches
        assert ranker.search("zanzibar", user_id="ana", key="digest", kinds=TURNS) == []
