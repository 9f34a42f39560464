"""Each PostgreSQL driver (erasure by session and by user, compaction, the rebased
import's write) run alone: on a real database of the tests' throwaway cluster, migrated
with the backend's schema, through a bare :class:`~pmm.storage.postgres.connection.Database`
that holds what :mod:`pmm.storage.postgres.handles` names, never a
``PostgresEventStore``. The chain is appended by
:func:`pmm.storage.postgres.chains.append_locked` and checked afterwards with
:func:`pmm.events.rebase.verify_export`, both without the store. (The partition swap,
:mod:`pmm.storage.postgres.swap`, takes the ``Database`` alone already; every erasure
here runs it.)"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pg_cluster import PostgresCluster

import pmm.storage.postgres
from pmm.errors import InvalidInputError
from pmm.events.chain import CheckedEvent, check_new_event
from pmm.events.rebase import verify_export
from pmm.records import Event, NewEvent, VerifyReport, event_from_row
from pmm.retention.compaction import COMPACTION_KIND
from pmm.retention.erasure import REDACTION_KIND
from pmm.storage.postgres.chains import append_locked, chain_keys
from pmm.storage.postgres.connection import Database
from pmm.storage.postgres.erasure import compact, forget
from pmm.storage.postgres.imports import rebase_user
from pmm.storage.postgres.rows import COLUMNS
from pmm.storage.postgres.windows import WINDOW_STATE, rebuild_windows, windows_current

TOKEN = "quokkaberry"


class BareDatabase:
    """A PostgreSQL log without the store: its connection pool, migrated, with the window
    keys built for ``window_radius``, and the chained append."""

    def __init__(self, url: str, window_radius: int = 2) -> None:
        self.window_radius = window_radius
        self.max_content_bytes = 1_048_576
        self._db = Database(url, timeout=30.0, pool_size=2)
        self._db.migrate()
        if not windows_current(self._db.read(WINDOW_STATE)[0], window_radius):
            with self._db.write() as conn:
                rebuild_windows(conn, window_radius)

    def _checked(self, entry: NewEvent) -> CheckedEvent:
        return check_new_event(entry, self.max_content_bytes)

    def _append_locked(
        self,
        conn: psycopg.Connection[Any],
        checked: list[CheckedEvent],
        *,
        ids: Sequence[int] | None = None,
    ) -> list[Event]:
        return append_locked(conn, checked, self.window_radius, ids=ids)

    # -- for the tests -----------------------------------------------------------------

    def append(self, entries: list[NewEvent]) -> list[Event]:
        with self._db.write() as conn:
            return self._append_locked(conn, [self._checked(e) for e in entries])

    def rows(self, where: str = "TRUE", params: Sequence[Any] = ()) -> list[Event]:
        sql = f"SELECT {COLUMNS} FROM events WHERE {where} ORDER BY id"
        return [event_from_row(r) for r in self._db.read(sql, params)]

    def verified(self) -> VerifyReport:
        """The whole log verified as its rows and chain secrets are, without the store."""
        with self._db.write() as conn:
            keys = chain_keys(conn)
        return verify_export(self.rows(), keys)


@pytest.fixture
def bare(pg_url: str) -> Iterator[BareDatabase]:
    db = BareDatabase(pg_url)
    try:
        yield db
    finally:
        db._db.close()


def _turns(session: str, user: str | None, n: int, start: int = 0) -> list[NewEvent]:
    return [
        NewEvent(
            "prompt" if i % 2 == 0 else "response",
            f"Turn {i} of {session}: we spoke about the harbour in Bergen and the ferry "
            f"times, number {i * 7}.",
            session,
            "user" if i % 2 == 0 else "assistant",
            None,
            None,
            user,
        )
        for i in range(start, start + n)
    ]


def _count(db: BareDatabase, sql: str, params: Sequence[Any] = ()) -> int:
    return int(db._db.read(sql, params)[0][0])


def test_the_store_class_is_not_needed(bare: BareDatabase) -> None:
    """What the drivers run on here is no store: the proof that each test below runs its
    driver alone."""
    assert not isinstance(bare, pmm.storage.postgres.PostgresEventStore)


def test_forget_a_session_alone(bare: BareDatabase) -> None:
    alice = bare.append(_turns("alice", "alice", 3))
    secret = bare.append(
        [NewEvent("prompt", f"my passport is in the {TOKEN} jar", "alice", "user", None, None)]
    )[0]
    bob = bare.append(_turns("bob", "bob", 3))
    with bare._db.write() as conn:
        conn.execute(
            "INSERT INTO embeddings(event_id, model, dim, vector, shard)"
            " SELECT id, 'm', 1, '\\x00'::bytea, shard FROM events WHERE id = ANY(%s)",
            ([secret.id, bob[0].id],),
        )
        conn.execute(
            "INSERT INTO edges(src, dst, kind) VALUES (%s, %s, 'NEXT'), (%s, %s, 'NEXT')",
            (alice[0].id, secret.id, bob[0].id, bob[1].id),
        )
    assert _count(bare, "SELECT count(*) FROM event_windows WHERE session_id = 'alice'") > 0

    report = forget(bare, session_id="alice", reason="asked to")

    erased = [e.id for e in [*alice, secret]]
    assert report.erased == erased
    [marker] = report.markers
    assert (marker.kind, marker.session_id, marker.user_id) == (REDACTION_KIND, "alice", "alice")
    for e in bare.rows("session_id = 'alice' AND kind <> %s", (REDACTION_KIND,)):
        assert (e.content, e.summary, e.digest_method) == (None, None, "redacted")
    assert [e.content for e in bare.rows("session_id = 'bob'")] == [e.content for e in bob]
    assert [r[0] for r in bare._db.read("SELECT event_id FROM embeddings")] == [bob[0].id]
    assert bare._db.read("SELECT src, dst FROM edges") == [(bob[0].id, bob[1].id)]
    assert _count(bare, "SELECT count(*) FROM events WHERE content LIKE %s", (f"%{TOKEN}%",)) == 0
    assert bare.verified().ok


def test_forget_a_user_with_her_identifiers_alone(bare: BareDatabase) -> None:
    ana = bare.append(_turns("ana-1", "ana", 2) + _turns("ana-2", "ana", 2))
    bob = bare.append(_turns("bob", "bob", 2))

    report = forget(
        bare, event_ids=[e.id for e in ana], reason="account deleted", identifiers_of="ana"
    )

    assert report.erased == [e.id for e in ana]
    assert all(m.user_id is None and m.session_id is None for m in report.markers)
    assert bare.rows("user_id = 'ana' OR session_id LIKE 'ana-%%'") == []
    assert _count(bare, "SELECT count(*) FROM chains WHERE chain = 'ana'") == 0
    assert _count(bare, "SELECT count(*) FROM session_owners WHERE user_id = 'ana'") == 0
    assert _count(bare, "SELECT count(*) FROM event_windows WHERE session_id LIKE 'ana-%%'") == 0
    assert [e.content for e in bare.rows("user_id = 'bob'")] == [e.content for e in bob]
    assert bare.verified().ok


def test_compact_alone(bare: BareDatabase) -> None:
    old = bare.append(_turns("s1", None, 4))
    undigested = bare.append(_turns("s1", None, 1, start=4))[0]
    with bare._db.write() as conn:
        for e in old:
            conn.execute(
                "UPDATE events SET summary = %s, digest_method = 'heuristic' WHERE id = %s",
                (f"summary of turn {e.id}", e.id),
            )
    later = datetime.now(UTC) + timedelta(days=2)

    plan = compact(bare, older_than="1d", now=later, dry_run=True)
    assert plan.compacted == [e.id for e in old] and plan.marker is None
    assert _count(bare, "SELECT count(*) FROM events WHERE content IS NULL") == 0
    report = compact(bare, older_than="1d", now=later)

    assert report.compacted == [e.id for e in old]
    assert report.marker is not None and report.marker.kind == COMPACTION_KIND
    rows = {e.id: e for e in bare.rows()}
    assert all(rows[e.id].content is None and rows[e.id].summary for e in old)
    assert rows[undigested.id].content == undigested.content  # no digest: its text stays
    assert bare.verified().ok


def _export(url: str, user: str) -> tuple[list[Event], list[tuple[str, bytes]]]:
    """One user's events and chain secret, as ``pmm export --user`` writes them, from a
    second bare database."""
    source = BareDatabase(url)
    try:
        source.append(_turns("src-other", "zoe", 2))
        source.append(_turns(f"{user}-1", user, 3) + _turns(f"{user}-2", user, 2))
        with source._db.write() as conn:
            keys = chain_keys(conn, user)
        return source.rows("user_id = %s", (user,)), keys
    finally:
        source._db.close()


def test_rebase_user_alone(bare: BareDatabase, pg_cluster: PostgresCluster) -> None:
    with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE pmm_drivers_alone_source")
    events, keys = _export(pg_cluster.url.rsplit("/", 1)[0] + "/pmm_drivers_alone_source", "ana")
    bare.append(_turns("bob-1", "bob", 3))

    user, appended = rebase_user(bare, events, keys)

    assert user == "ana" and len(appended) == len(events) + 1  # and her provenance record
    assert [e.content for e in appended if e.kind in ("prompt", "response")] == [
        e.content for e in events
    ]
    stored = bare.rows("user_id = 'ana'")
    assert [e.id for e in stored] == [e.id for e in appended]
    assert {e.session_id for e in stored} >= {"ana-1", "ana-2"}
    assert _count(bare, "SELECT count(*) FROM session_owners WHERE user_id = 'ana'") == 2
    assert bare.verified().ok

    count = len(bare.rows())
    with pytest.raises(InvalidInputError):
        rebase_user(bare, events, keys)  # she is there now: refused, nothing written
    assert len(bare.rows()) == count
