"""search_text without a session, user or kind filter reads the full-text index without
joining ``events`` (it would filter nothing): the same rows, in the same order, as the
joined form, ties and the all-common-words order included, on a log of several users,
sessions and kinds. The window key's kind filter is dropped where it names every kind
that has window rows (recall's default: prompt and response). A filtered search keeps
the join and its user's rows only."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

WORDS = (
    "coffee tea lisbon porto dog cat budget kitchen flight doctor knee garden tomato "
    "router email sister brother book summer winter guitar piano bank job trip train "
    "museum beach rain snow market bread cheese wine river bridge castle island"
).split()
UNJOINED = re.compile(
    r"SELECT rowid, (?P<rank>.*) AS score FROM (?P<table>\w+) WHERE \w+ MATCH \?"
    r" ORDER BY (?P<order>score|rowid DESC) LIMIT \?"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    rng = random.Random(7)
    entries = []
    users = {"ana": ("a1", "a2"), "bo": ("b1", "b2"), "cy": ("c1", "c2")}
    for i in range(1300):  # over 1,000 events: the stopword and all-common paths run
        user = rng.choice(sorted(users))
        session = rng.choice(users[user])
        kind = rng.choice(("prompt", "response", "prompt", "response", "note"))
        if i % 7 == 0:
            text = "the same coffee in lisbon"  # identical turns: tied scores
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        entries.append(NewEvent(kind, text, session, None, None, None, user))
    # "every" is in every event: a query of it alone takes the all-common path
    entries = [NewEvent(e.kind, e.content + " every", *_rest(e)) for e in entries]
    with EventStore(tmp_path_factory.mktemp("unjoined") / "log.db") as opened:
        opened.append_many(entries)
        opened.sync_search_index()
        yield opened


def _rest(e: NewEvent) -> tuple[Any, ...]:
    return (e.session_id, e.role, e.meta, e.ts, e.user_id)


def _joined(sql: str) -> str:
    """The form search_text used before: the same rank and match, joined to events."""
    found = UNJOINED.fullmatch(sql)
    assert found is not None, sql
    table = found["table"]
    order = "rank" if found["order"] == "score" else "e.id DESC"
    return (
        f"SELECT e.id, {found['rank']} AS rank FROM {table} JOIN events e ON e.id = "
        f"{table}.rowid WHERE {table} MATCH ? ORDER BY {order} LIMIT ?"
    )


def _spied(store: EventStore, call: Any) -> tuple[Any, list[tuple[str, list[Any]]]]:
    seen: list[tuple[str, list[Any]]] = []
    read = store._read

    def spy(sql: str, params: Any = ()) -> Any:
        seen.append((sql, list(params)))
        return read(sql, params)

    store._read = spy  # type: ignore[method-assign]
    try:
        return call(), [s for s in seen if " MATCH ?" in s[0] and "ORDER BY" in s[0]]
    finally:
        del store._read


QUERIES = [
    "coffee in lisbon",
    "dog garden tomato",
    "where is my sister's flight",
    "piano guitar bank job",
    "every",
    "every coffee",
    "bread cheese wine river",
]


CASES = [("turn", None), ("content", None), ("digest", None), ("window", None)]
CASES += [("window", ("prompt", "response")), ("window", ("note", "response", "prompt"))]


@pytest.mark.parametrize(("key", "kinds"), CASES)
def test_unfiltered_search_equals_the_joined_form(
    store: EventStore, key: str, kinds: tuple[str, ...] | None
) -> None:
    tied = common = compared = 0
    for query in QUERIES:
        for limit in (5, 50, 2000):
            hits, sqls = _spied(
                store,
                lambda q=query, n=limit: store.search_text(
                    q, key=key, limit=n, sync=False, kinds=kinds
                ),
            )
            if not sqls:  # no indexed word: nothing to compare
                assert hits == []
                continue
            ((sql, params),) = sqls
            assert "JOIN" not in sql
            old = [(r[0], -r[1]) for r in store._read(_joined(sql), params)]
            assert hits == old, (key, query, limit)
            compared += 1
            scores = [s for _, s in hits]
            tied += len(set(scores)) < len(scores)
            common += bool(hits) and set(scores) == {0.0}
    assert compared >= 15
    if key != "digest":  # no digests here: every search of that key finds nothing
        assert tied >= 3  # ties present: their order is compared too
        assert common >= 1


def test_only_turns_have_window_rows(store: EventStore) -> None:
    """The premise of dropping the window key's kind filter: its rows are prompts and
    responses only (the log holds notes too)."""
    kinds = store._read(
        "SELECT e.kind, count(*) FROM events_window_fts w JOIN events e ON e.id = w.rowid"
        " GROUP BY e.kind"
    )
    assert {k for k, _ in kinds} == {"prompt", "response"}
    assert store._read("SELECT count(*) FROM events WHERE kind = 'note'")[0][0] > 100


def test_filtered_searches_keep_the_join_and_their_user(store: EventStore) -> None:
    owners = dict(store._read("SELECT id, user_id FROM events"))
    sessions = dict(store._read("SELECT id, session_id FROM events"))
    kinds = dict(store._read("SELECT id, kind FROM events"))
    for query in QUERIES:  # one of the two turn kinds: the window key's filter stays
        hits, sqls = _spied(
            store, lambda q=query: store.search_text(q, key="window", kinds=["prompt"])
        )
        assert all("JOIN events" in s for s, _ in sqls)
        assert {kinds[i] for i, _ in hits} <= {"prompt"}
    assert store.search_text("coffee lisbon", key="turn", kinds=["note"])
    for key in ("turn", "window"):
        for query in QUERIES:
            for user in ("ana", "bo"):
                hits, sqls = _spied(
                    store, lambda q=query, u=user, k=key: store.search_text(q, key=k, user_id=u)
                )
                assert all("JOIN events" in s for s, _ in sqls)
                assert {owners[i] for i, _ in hits} <= {user}
            hits = store.search_text(query, key=key, session_id="c2", kinds=["prompt"])
            assert {sessions[i] for i, _ in hits} <= {"c2"}
    unfiltered = store.search_text("coffee lisbon", key="turn", limit=2000)
    assert {owners[i] for i, _ in unfiltered} == {"ana", "bo", "cy"}


def test_events_are_never_deleted_so_the_join_filters_nothing(tmp_path: Path) -> None:
    """The premise: every index row's rowid is an event's id, also after a redaction
    (which erases a row's text but keeps the row)."""
    with EventStore(tmp_path / "log.db") as opened:
        added = opened.append_many([NewEvent("prompt", f"coffee {i}", "s") for i in range(30)])
        opened.sync_search_index()
        opened.redact(added[3].id, reason="test")
        opened.sync_search_index()
        assert added[3].id not in [i for i, _ in opened.search_text("coffee", limit=50)]
        for table in ("events_fts", "events_window_fts"):
            orphans = opened._read(
                f"SELECT count(*) FROM {table} WHERE rowid NOT IN (SELECT id FROM events)"
            )
            assert orphans[0][0] == 0
